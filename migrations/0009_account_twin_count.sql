ALTER TABLE `accounts` ADD `twins` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Accounts made before this migration start from the twins they have.
UPDATE `accounts` SET `twins` = (SELECT count(*) FROM `twins` WHERE `twins`.`owner` = `accounts`.`uuid`);
