CREATE TABLE `twin_identities` (
	`twin` text NOT NULL,
	`account` text NOT NULL,
	`identity` text NOT NULL,
	`validity_ts` real,
	`visibility` text,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	PRIMARY KEY(`twin`, `account`, `identity`),
	FOREIGN KEY (`twin`) REFERENCES `twins`(`uuid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `twin_identities_identity` ON `twin_identities` (`identity`,`account`,`twin`);--> statement-breakpoint
CREATE INDEX `twin_identities_public` ON `twin_identities` (`identity`,`account`,`twin`) WHERE "twin_identities"."visibility" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `twin_identities_public_twin` ON `twin_identities` (`twin`,`account`,`identity`) WHERE "twin_identities"."visibility" IS NOT NULL;