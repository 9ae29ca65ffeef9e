DROP INDEX `subscriptions_account`;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `confirmation_ts` real DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `confirmations` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- A subscription made before this migration counts its first confirmation message from when
-- it was made; resends before it were not recorded.
UPDATE `subscriptions` SET `confirmation_ts` = `created_ts`, `confirmations` = 1;--> statement-breakpoint
CREATE INDEX `subscriptions_live` ON `subscriptions` (`account`,`status`,`validity_ts`);--> statement-breakpoint
CREATE INDEX `subscriptions_confirmations` ON `subscriptions` (`account`,`confirmation_ts`);--> statement-breakpoint
CREATE INDEX `subscriptions_account` ON `subscriptions` (`account`,`created_ts`,`uuid`);--> statement-breakpoint
CREATE INDEX `subscriptions_grantee` ON `subscriptions` (`account`,`publisher`);