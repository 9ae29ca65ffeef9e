CREATE TABLE `doc_garbage` (
	`object` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `doc_garbage_account` ON `doc_garbage` (`account`,`created_ts`);--> statement-breakpoint
CREATE TABLE `docs` (
	`uuid` text PRIMARY KEY NOT NULL,
	`twin` text NOT NULL,
	`name` text NOT NULL,
	`account` text NOT NULL,
	`object` text NOT NULL,
	`size` integer NOT NULL,
	`hash` text NOT NULL,
	`storage_class` text NOT NULL,
	`description` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `docs_twin_name` ON `docs` (`twin`,`name`);--> statement-breakpoint
CREATE INDEX `docs_twin_account` ON `docs` (`twin`,`account`);--> statement-breakpoint
CREATE TABLE `uploads` (
	`handler` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`user` text NOT NULL,
	`token_hash` text NOT NULL,
	`state` text NOT NULL,
	`object` text,
	`size` integer,
	`hash` text,
	`validity_ts` real NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `uploads_account_validity` ON `uploads` (`account`,`validity_ts`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `doc_bytes` integer DEFAULT 0 NOT NULL;