CREATE TABLE `outbox_sights` (
	`id` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`data` text NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `outbox_sights_account` ON `outbox_sights` (`account`,`created_ts`);--> statement-breakpoint
ALTER TABLE `notification_outbox` ADD `sight` text;--> statement-breakpoint
ALTER TABLE `stream_outbox` ADD `sight` text;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `dict` text;