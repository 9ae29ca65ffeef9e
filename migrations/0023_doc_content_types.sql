ALTER TABLE `docs` ADD `content_type` text DEFAULT 'application/octet-stream' NOT NULL;--> statement-breakpoint
ALTER TABLE `uploads` ADD `content_type` text;