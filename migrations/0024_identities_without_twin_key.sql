-- Another account's identities on a twin live in that account's database, the twin in its
-- owner's: the key to twins goes. Dropping the table that holds the key needs no pragma.
CREATE TABLE `__new_twin_identities` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`identity` text NOT NULL,
	`validity_ts` real,
	`visibility` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	PRIMARY KEY(`twin`, `account`, `identity`)
);
--> statement-breakpoint
INSERT INTO `__new_twin_identities`("twin", "account", "identity", "validity_ts", "visibility", "created_ts", "updated_ts") SELECT "twin", "account", "identity", "validity_ts", "visibility", "created_ts", "updated_ts" FROM `twin_identities`;--> statement-breakpoint
DROP TABLE `twin_identities`;--> statement-breakpoint
ALTER TABLE `__new_twin_identities` RENAME TO `twin_identities`;--> statement-breakpoint
CREATE INDEX `twin_identities_identity` ON `twin_identities` (`identity`,`account`,`twin`);--> statement-breakpoint
CREATE INDEX `twin_identities_public` ON `twin_identities` (`identity`,`account`,`twin`) WHERE "twin_identities"."visibility" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `twin_identities_public_twin` ON `twin_identities` (`twin`,`account`,`identity`) WHERE "twin_identities"."visibility" IS NOT NULL;