DROP INDEX `sticker_recipients_twin`;--> statement-breakpoint
CREATE INDEX `sticker_recipients_twin_account` ON `sticker_recipients` (`recipient`,`twin`,`account`,`created_ts`,`color`);--> statement-breakpoint
CREATE INDEX `sticker_recipients_account` ON `sticker_recipients` (`recipient`,`account`,`created_ts`,`twin`,`color`);--> statement-breakpoint
CREATE INDEX `sticker_recipients_color` ON `sticker_recipients` (`recipient`,`color`,`created_ts`,`account`,`twin`);--> statement-breakpoint
CREATE INDEX `sticker_recipients_account_color` ON `sticker_recipients` (`recipient`,`account`,`color`,`created_ts`,`twin`);--> statement-breakpoint
CREATE INDEX `sticker_recipients_twin` ON `sticker_recipients` (`recipient`,`twin`,`created_ts`,`account`,`color`);