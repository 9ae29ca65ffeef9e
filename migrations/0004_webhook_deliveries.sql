CREATE TABLE `webhook_deliveries` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`subscription` text NOT NULL,
	`message` text NOT NULL,
	`attempt` integer NOT NULL,
	`attempted_ts` real NOT NULL,
	`outcome` text NOT NULL,
	`http_status` integer,
	`duration_ms` integer NOT NULL,
	`next_attempt_ts` real,
	`detail` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_subscription` ON `webhook_deliveries` (`subscription`,`seq`);--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `failure_reason` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `sealed_token` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `sealed_key` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `sealed_previous_key` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `previous_key_until` real;