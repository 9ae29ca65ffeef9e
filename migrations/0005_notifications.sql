CREATE TABLE `notification_grants` (
	`account` text NOT NULL,
	`grantee` text NOT NULL,
	`topics` text NOT NULL,
	`updated_ts` real NOT NULL,
	PRIMARY KEY(`account`, `grantee`)
);
--> statement-breakpoint
CREATE TABLE `notification_outbox` (
	`message` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`subscription` text NOT NULL,
	`trigger` text NOT NULL,
	`twin` text NOT NULL,
	`event` text NOT NULL,
	`subscription_view` text NOT NULL,
	`sent_ts` real NOT NULL,
	`queued_ts` real,
	`delivered_ts` real
);
--> statement-breakpoint
CREATE INDEX `notification_outbox_pending` ON `notification_outbox` (`account`,`queued_ts`);--> statement-breakpoint
-- SQLite adds a NOT NULL column only with a default; every existing subscription is to its own
-- account's topic.
ALTER TABLE `subscriptions` ADD `publisher` text NOT NULL DEFAULT '';--> statement-breakpoint
UPDATE `subscriptions` SET `publisher` = `account`;--> statement-breakpoint
CREATE INDEX `subscriptions_topic` ON `subscriptions` (`publisher`,`topic`,`status`);