CREATE TABLE `job_lines` (
	`job` text NOT NULL,
	`line` integer NOT NULL,
	`trace` text NOT NULL,
	`at` real NOT NULL,
	PRIMARY KEY(`job`, `line`)
);
--> statement-breakpoint
CREATE TABLE `jobs` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`user` text NOT NULL,
	`kind` text NOT NULL,
	`operation` text,
	`status` text NOT NULL,
	`record` text NOT NULL,
	`input` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	`expires_ts` real
);
--> statement-breakpoint
CREATE INDEX `jobs_account_created` ON `jobs` (`account`,`created_ts`,`uuid`);