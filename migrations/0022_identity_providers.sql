CREATE TABLE `identity_providers` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`issuer` text NOT NULL,
	`audiences` text NOT NULL,
	`algorithms` text NOT NULL,
	`jwks_uri` text,
	`jwks` text,
	`clock_skew` integer NOT NULL,
	`subject_claim` text NOT NULL,
	`dict_claims` text NOT NULL,
	`provisioning_role` text,
	`provisioning_name_claim` text,
	`token_validity` integer NOT NULL,
	`exp_extension` integer NOT NULL,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `identity_providers_issuer` ON `identity_providers` (`account`,`issuer`);--> statement-breakpoint
CREATE INDEX `identity_providers_account` ON `identity_providers` (`account`,`uuid`);--> statement-breakpoint
CREATE INDEX `identity_providers_role` ON `identity_providers` (`provisioning_role`);--> statement-breakpoint
CREATE TABLE `user_external_ids` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`user` text NOT NULL,
	`provider` text NOT NULL,
	`subject` text NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `user_external_ids_subject` ON `user_external_ids` (`provider`,`subject`);--> statement-breakpoint
CREATE UNIQUE INDEX `user_external_ids_user` ON `user_external_ids` (`user`,`provider`);