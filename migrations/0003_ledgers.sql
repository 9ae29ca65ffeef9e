CREATE TABLE `ledger_entries` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`value` text NOT NULL,
	`size` integer NOT NULL,
	`visibility` text,
	`history` text,
	`publish` text,
	`entry_created_ts` real NOT NULL,
	`entry_updated_ts` real NOT NULL,
	`value_changed_ts` real NOT NULL,
	PRIMARY KEY(`twin`, `account`, `name`)
);
--> statement-breakpoint
CREATE TABLE `ledger_history` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`ts` real NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`twin`, `account`, `name`, `ts`)
);
