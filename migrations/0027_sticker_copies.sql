CREATE TABLE `sticker_copies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`twin` text NOT NULL,
	`color` text NOT NULL,
	`change` text NOT NULL,
	`recipients` text NOT NULL,
	`note` text,
	`validity_ts` real NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `sticker_copies_account` ON `sticker_copies` (`account`,`id`);--> statement-breakpoint
ALTER TABLE `sticker_recipients` ADD `note` text;--> statement-breakpoint
ALTER TABLE `sticker_recipients` ADD `validity_ts` real DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Recipient rows from before carry their sticker's note and validity_ts, as the reads now take
-- them from the row itself; before sharding every sticker shares its recipients' database.
UPDATE `sticker_recipients` SET `note` = (SELECT `note` FROM `stickers` AS s WHERE s.`twin` = `sticker_recipients`.`twin` AND s.`account` = `sticker_recipients`.`account` AND s.`color` = `sticker_recipients`.`color`), `validity_ts` = coalesce((SELECT `validity_ts` FROM `stickers` AS s WHERE s.`twin` = `sticker_recipients`.`twin` AND s.`account` = `sticker_recipients`.`account` AND s.`color` = `sticker_recipients`.`color`), 0);
