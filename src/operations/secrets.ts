import * as z from "zod/mini";
import { newUserSecret, randomPin, sha256Hex } from "../base/crypto";
import { secretBucket } from "../db/shards";
import { findSecret, redeemPin } from "../db/secrets";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { manageableUser } from "../account/guards";
import { revokeStreams } from "../notifications/streams/client";
import { CLOSE } from "../notifications/streams/frames";
import { defineOperation } from "./operation";
import { secretRecord, timestamp, timestampOut, uuid, uuidOut } from "./schemas";
import { dbOf } from "../db/client";

export const PIN_LENGTH = 10;
export const PIN_LIFETIME_SECONDS = 600;

const userParams = z.strictObject({ user: uuid });

function pinHash(account: string, pin: string) {
	return sha256Hex(`${account}:${pin}`);
}

export const createUserSecretPin = defineOperation({
	name: "create_user_secret_pin",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "Issue a single-use PIN that the user redeems for a new secret",
	description:
		"Issues a single-use PIN (valid 10 minutes) for a user of the caller's account, which anyone holding it redeems once with create_user_secret for the user's new User Secret; validity_ts becomes that secret's expiry. For another user the caller must be able to grant its role. Needs a User Secret, not a User Token.",
	refuses: ["credential_forbidden", "escalation", "not_found"],
	example: { validity_ts: null },
	auth: "secret",
	status: 201,
	response: z.object({ pin: z.string() }),
	params: userParams,
	body: z.strictObject({
		validity_ts: z
			.optional(z.nullable(timestamp))
			.check(z.refine((ts) => ts == null || ts > now(), "Must be in the future")),
	}),
	async run({ params, body }, ctx) {
		const pin = randomPin(PIN_LENGTH);
		const at = now();
		const record = {
			hash: await pinHash(ctx.caller.account, pin),
			secret_validity_ts: body.validity_ts ?? null,
			expires_ts: at + PIN_LIFETIME_SECONDS,
			created_ts: at,
		};
		await accountClient(ctx, ctx.caller.account).issuePin(ctx.caller, params.user, record);
		return { pin };
	},
});

// The PIN in the path is the only proof; wrong, used and expired PINs all look the same.
export const createUserSecret = defineOperation({
	name: "create_user_secret",
	summary: "Redeem a PIN for the user's new secret, shown only in this answer",
	description:
		"Redeems a PIN of create_user_secret_pin for the user's new User Secret, which replaces the old one and is shown only in this answer. A wrong, used or expired PIN is 404 and never says which.",
	refuses: ["pin_not_found"],
	auth: "none",
	status: 201,
	response: z.object({
		account: uuidOut,
		user: uuidOut,
		secret: z.string(),
		validity_ts: z.nullable(timestampOut),
		created_ts: timestampOut,
		updated_ts: timestampOut,
	}),
	params: z.strictObject({ account: z.string(), pin: z.string() }),
	async run({ params: { account, pin } }, ctx) {
		if (!uuid.safeParse(account).success || !/^[A-Z0-9]{8,64}$/.test(pin)) {
			throw new ApiError("pin_not_found");
		}
		const { secret, hash, fingerprint } = await newUserSecret(secretBucket(ctx.env, account));
		const row = await redeemPin(dbOf(ctx), await pinHash(account, pin), { hash, fingerprint }, now());
		if (!row) throw new ApiError("pin_not_found");
		// The secret it replaces ends, and the streams it opened with it.
		await revokeStreams(ctx.env, { account: row.account, user: row.user, code: CLOSE.credentialEnded });
		return { ...row, secret };
	},
});

export const getUserSecret = defineOperation({
	name: "get_user_secret",
	summary: "The User Secret record of a user",
	description:
		"The record of a user's User Secret (fingerprint and validity, never the secret). A user may always read its own; another user's needs the right to grant its role.",
	refuses: ["escalation", "not_found"],
	auth: "secret",
	response: secretRecord,
	params: userParams,
	async run({ params }, ctx) {
		// Reading another user's secret record is managing that user: a PIN is not needed to lock it out.
		if (params.user !== ctx.caller.user) await manageableUser(dbOf(ctx), ctx.caller, params.user);
		const row = await findSecret(dbOf(ctx), ctx.caller.account, params.user);
		if (!row) throw new ApiError("not_found", { description: "No such user secret" });
		return row;
	},
});

export const updateUserSecret = defineOperation({
	name: "update_user_secret",
	summary: "Change when a user's secret expires (a past time expires it at once)",
	description:
		"Changes when a user's secret expires: a number (a past one expires it at once) or null for never. A user may always change its own; another user's needs the right to grant its role.",
	refuses: ["escalation", "not_found"],
	example: { validity_ts: 4102444800 },
	auth: "secret",
	response: secretRecord,
	params: userParams,
	body: z.strictObject({ validity_ts: z.nullable(timestamp) }),
	async run({ params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).changeSecretValidity(ctx.caller, params.user, body.validity_ts);
	},
});

export const deleteUserSecret = defineOperation({
	name: "delete_user_secret",
	summary: "Delete a user's secret; it is refused from the next request on",
	description:
		"Deletes a user's secret: it is refused from the next request on. A user may always delete its own; another user's needs the right to grant its role.",
	refuses: ["escalation", "not_found"],
	auth: "secret",
	response: secretRecord,
	params: userParams,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).removeSecret(ctx.caller, params.user);
	},
});
