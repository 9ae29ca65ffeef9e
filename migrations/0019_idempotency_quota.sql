CREATE TABLE `idempotency_quota` (
	`account` text PRIMARY KEY NOT NULL,
	`keys` integer NOT NULL,
	`bytes` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `idempotency_keys` ADD `bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `idempotency_keys` SET `bytes` = length(CAST(`body` AS BLOB)) WHERE `body` IS NOT NULL;--> statement-breakpoint
INSERT INTO `idempotency_quota` (`account`, `keys`, `bytes`) SELECT `account`, count(*), sum(`bytes`) FROM `idempotency_keys` WHERE `status` IS NOT NULL GROUP BY `account`;
