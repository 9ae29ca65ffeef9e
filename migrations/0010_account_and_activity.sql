ALTER TABLE `accounts` ADD `updated_ts` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `accounts` ADD `resource_access_log` text;--> statement-breakpoint
ALTER TABLE `users` ADD `activity` text;--> statement-breakpoint
-- Accounts made before the column existed were last updated when they were made.
UPDATE `accounts` SET `updated_ts` = `created_ts`;
