ALTER TABLE `uploads` ADD `lease_ts` real;--> statement-breakpoint
CREATE INDEX `uploads_account_lease` ON `uploads` (`account`,`lease_ts`);