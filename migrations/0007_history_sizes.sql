ALTER TABLE `ledger_history` ADD `bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Records written before this migration get their size; new ones are written with it.
UPDATE `ledger_history` SET `bytes` = length(CAST(`value` AS BLOB));--> statement-breakpoint
CREATE INDEX `ledger_history_sizes` ON `ledger_history` (`twin`,`account`,`name`,`ts`,`bytes`);
