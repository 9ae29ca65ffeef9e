CREATE TABLE `write_guards` (
	`held` integer NOT NULL,
	CONSTRAINT "write_guards_held" CHECK("write_guards"."held" = 1)
);
