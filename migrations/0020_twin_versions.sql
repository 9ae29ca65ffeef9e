ALTER TABLE `idempotency_keys` ADD `etag` text;--> statement-breakpoint
ALTER TABLE `twins` ADD `version` integer DEFAULT 1 NOT NULL;