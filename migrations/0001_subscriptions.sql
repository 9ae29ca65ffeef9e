CREATE TABLE `subscriptions` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`user` text NOT NULL,
	`topic` text NOT NULL,
	`callback_url` text NOT NULL,
	`token_hash` text NOT NULL,
	`status` text NOT NULL,
	`validity_ts` real NOT NULL,
	`message` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_attempt_ts` real,
	`last_outcome` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `subscriptions_token` ON `subscriptions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `subscriptions_account` ON `subscriptions` (`account`);