CREATE TABLE `account_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`at` real NOT NULL,
	`message` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `account_log_account` ON `account_log` (`account`,`id`);--> statement-breakpoint
CREATE TABLE `sticker_recipients` (
	`recipient` text NOT NULL,
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`color` text NOT NULL,
	`created_ts` real NOT NULL,
	PRIMARY KEY(`twin`, `account`, `color`, `recipient`)
);
--> statement-breakpoint
CREATE INDEX `sticker_recipients_twin` ON `sticker_recipients` (`recipient`,`twin`);--> statement-breakpoint
CREATE INDEX `sticker_recipients_newest` ON `sticker_recipients` (`recipient`,`created_ts`,`account`,`twin`,`color`);--> statement-breakpoint
CREATE TABLE `stickers` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`color` text NOT NULL,
	`note` text,
	`recipients` text NOT NULL,
	`validity_ts` real NOT NULL,
	`created_ts` real NOT NULL,
	`publish` text NOT NULL,
	PRIMARY KEY(`twin`, `account`, `color`)
);
--> statement-breakpoint
CREATE INDEX `stickers_due` ON `stickers` (`account`,`validity_ts`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `stickers` integer DEFAULT 0 NOT NULL;