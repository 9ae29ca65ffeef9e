CREATE TABLE `bucket_moves` (
	`bucket` integer PRIMARY KEY NOT NULL,
	`prefix` text NOT NULL,
	`source` text NOT NULL,
	`target` text NOT NULL,
	`state` text NOT NULL,
	`started_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bucket_moves_prefix_unique` ON `bucket_moves` (`prefix`);