CREATE TABLE `index_rows` (
	`table` text NOT NULL,
	`generation` integer NOT NULL,
	`twin` text NOT NULL,
	`properties` text NOT NULL,
	`size` integer NOT NULL,
	`updated_ts` real NOT NULL,
	PRIMARY KEY(`table`, `generation`, `twin`)
);
--> statement-breakpoint
CREATE TABLE `index_tables` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`rule` text NOT NULL,
	`properties` text NOT NULL,
	`templates` text NOT NULL,
	`generation` integer NOT NULL,
	`status` text NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`table_size` integer DEFAULT 0 NOT NULL,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `index_tables_account_name` ON `index_tables` (`account`,`name`);--> statement-breakpoint
CREATE INDEX `ledger_entries_account_twin` ON `ledger_entries` (`account`,`twin`);