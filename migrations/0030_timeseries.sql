CREATE TABLE `timeseries_chunks` (
	`table` text NOT NULL,
	`generation` integer NOT NULL,
	`start` real NOT NULL,
	`account` text NOT NULL,
	PRIMARY KEY(`table`, `generation`, `start`)
);
--> statement-breakpoint
CREATE INDEX `timeseries_chunks_account` ON `timeseries_chunks` (`account`,`table`,`generation`);--> statement-breakpoint
CREATE TABLE `timeseries_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`table` text NOT NULL,
	`generation` integer NOT NULL,
	`seq` integer NOT NULL,
	`entry` text NOT NULL,
	`twin` text NOT NULL,
	`ts` real,
	`dims` text NOT NULL,
	`measurement` text,
	`value` text NOT NULL,
	`bytes` integer NOT NULL,
	`dropped` text,
	`at` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `timeseries_outbox_account` ON `timeseries_outbox` (`account`,`id`);--> statement-breakpoint
CREATE TABLE `timeseries_tables` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`dimensions` text NOT NULL,
	`measurements` text NOT NULL,
	`defaults` text,
	`retention` text NOT NULL,
	`chunk` text NOT NULL,
	`rollups` text NOT NULL,
	`building` text NOT NULL,
	`keys` text DEFAULT '{}' NOT NULL,
	`generation` integer NOT NULL,
	`status` text NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`table_size` integer DEFAULT 0 NOT NULL,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `timeseries_tables_account_name` ON `timeseries_tables` (`account`,`name`);--> statement-breakpoint
ALTER TABLE `ledger_entries` ADD `timeseries` text;