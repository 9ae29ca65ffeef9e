import * as z from "zod/mini";
import { newUserSecret } from "../base/crypto";
import { bucketedId, sibling } from "../base/shards";
import { newAccountBucket } from "../db/shards";
import { insertAccount } from "../db/accounts";
import { now } from "../base/time";
import { defineOperation } from "./operation";
import { DEFAULT_STATEMENT, NO_RULES } from "./roles-defaults";
import { uuidOut } from "./schemas";
import { dbOf } from "../db/client";

export const ADMIN_ROLE_NAME = "Administrator";

export const createAccount = defineOperation({
	name: "create_account",
	summary: "Bootstrap: a new account with an Administrator role, its first user and that user's secret",
	description:
		"Bootstraps an account: an Administrator role that allows everything, a first user holding it, and that user's User Secret, shown only in this answer.",
	example: { name: "admin" },
	auth: "admin",
	status: 201,
	response: z.object({ account: uuidOut, user: uuidOut, role: uuidOut, secret: z.string() }),
	body: z.strictObject({ name: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(128))) }),
	async run({ body }, ctx) {
		const at = now();
		// The account's bucket is in every id it makes, and its secret's first byte.
		const bucket = newAccountBucket(ctx.env);
		const account = bucketedId(bucket);
		const role = sibling(account);
		const user = sibling(account);
		const { secret, hash, fingerprint } = await newUserSecret(bucket);
		await insertAccount(dbOf({ d1: ctx.shards.for(account) }), {
			account: { uuid: account, created_ts: at, updated_ts: at },
			role: {
				uuid: role,
				account,
				name: ADMIN_ROLE_NAME,
				rules: NO_RULES,
				statement: DEFAULT_STATEMENT,
				created_ts: at,
				updated_ts: at,
			},
			user: { uuid: user, account, name: body.name ?? "admin", role, description: {}, created_ts: at, updated_ts: at },
			secret: {
				user,
				account,
				hash,
				fingerprint,
				validity_ts: null,
				created_ts: at,
				updated_ts: at,
			},
		});
		return { account, user, role, secret };
	},
});
