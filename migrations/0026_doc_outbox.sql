CREATE TABLE `doc_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`twin` text NOT NULL,
	`kind` text NOT NULL,
	`payload` text NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `doc_outbox_account` ON `doc_outbox` (`account`,`id`);