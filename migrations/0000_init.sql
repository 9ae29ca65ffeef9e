CREATE TABLE `accounts` (
	`uuid` text PRIMARY KEY NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE TABLE `roles` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`rules` text NOT NULL,
	`statement` text NOT NULL,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	FOREIGN KEY (`account`) REFERENCES `accounts`(`uuid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `roles_account` ON `roles` (`account`,`uuid`);--> statement-breakpoint
CREATE TABLE `secret_pins` (
	`hash` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`user` text NOT NULL,
	`secret_validity_ts` real,
	`expires_ts` real NOT NULL,
	`created_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `secret_pins_user` ON `secret_pins` (`user`);--> statement-breakpoint
CREATE TABLE `twins` (
	`uuid` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`status` text NOT NULL,
	`description` text NOT NULL,
	`creation_certificate` text NOT NULL,
	`termination_certificate` text,
	`updated_ts` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `twins_owner_uuid` ON `twins` (`owner`,`uuid`);--> statement-breakpoint
CREATE TABLE `user_secrets` (
	`user` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`hash` text NOT NULL,
	`fingerprint` text NOT NULL,
	`validity_ts` real,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	FOREIGN KEY (`user`) REFERENCES `users`(`uuid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `user_secrets_hash` ON `user_secrets` (`hash`);--> statement-breakpoint
CREATE TABLE `users` (
	`uuid` text PRIMARY KEY NOT NULL,
	`account` text NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`description` text NOT NULL,
	`created_ts` real NOT NULL,
	`updated_ts` real NOT NULL,
	FOREIGN KEY (`account`) REFERENCES `accounts`(`uuid`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`role`) REFERENCES `roles`(`uuid`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `users_account` ON `users` (`account`,`uuid`);--> statement-breakpoint
CREATE INDEX `users_role` ON `users` (`role`);