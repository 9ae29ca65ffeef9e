CREATE TABLE `idempotency_keys` (
	`account` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`trace` text NOT NULL,
	`status` integer,
	`content_type` text,
	`body` text,
	`created_ts` real NOT NULL,
	PRIMARY KEY(`account`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_age` ON `idempotency_keys` (`account`,`created_ts`);