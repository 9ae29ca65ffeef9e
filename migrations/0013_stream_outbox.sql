CREATE TABLE `stream_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`twin` text NOT NULL,
	`trigger` text NOT NULL,
	`topics` text NOT NULL,
	`entries` text NOT NULL,
	`at` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `stream_outbox_account` ON `stream_outbox` (`account`,`id`);