CREATE TABLE `directory_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account` text NOT NULL,
	`identity` text NOT NULL,
	`twin` text NOT NULL,
	`change` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `directory_outbox_account` ON `directory_outbox` (`account`,`id`);--> statement-breakpoint
CREATE TABLE `identity_directory` (
	`identity` text NOT NULL,
	`account` text NOT NULL,
	`twin` text NOT NULL,
	`bucket` integer NOT NULL,
	PRIMARY KEY(`identity`, `account`, `twin`)
);
--> statement-breakpoint
CREATE INDEX `identity_directory_bucket` ON `identity_directory` (`bucket`);--> statement-breakpoint
CREATE TABLE `twin_holders` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	PRIMARY KEY(`twin`, `account`)
);
--> statement-breakpoint
-- Identities from before: each public one waits in its account's outbox for the directory, which
-- its object fills on its next write (docs/deploying.md, "Upgrading to shards"); each holder of
-- identities on another account's twin in the same database is listed with the twin.
INSERT INTO `directory_outbox` (`account`, `identity`, `twin`, `change`) SELECT `account`, `identity`, `twin`, 'put' FROM `twin_identities` WHERE `visibility` IS NOT NULL ORDER BY `account`, `twin`, `identity`;--> statement-breakpoint
INSERT OR IGNORE INTO `twin_holders` (`twin`, `account`) SELECT DISTINCT i.`twin`, i.`account` FROM `twin_identities` AS i JOIN `twins` AS t ON t.`uuid` = i.`twin` WHERE i.`account` <> t.`owner`;
