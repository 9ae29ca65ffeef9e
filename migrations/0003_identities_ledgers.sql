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
--> statement-breakpoint
CREATE TABLE `twin_identities` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`identity` text NOT NULL,
	`validity_ts` real,
	`visibility` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	PRIMARY KEY(`twin`, `account`, `identity`),
	FOREIGN KEY (`twin`) REFERENCES `twins`(`uuid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `twin_identities_identity` ON `twin_identities` (`identity`,`account`,`twin`);--> statement-breakpoint
CREATE INDEX `twin_identities_public` ON `twin_identities` (`identity`,`account`,`twin`) WHERE "twin_identities"."visibility" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `twin_identities_public_twin` ON `twin_identities` (`twin`,`account`,`identity`) WHERE "twin_identities"."visibility" IS NOT NULL;