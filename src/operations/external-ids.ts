import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { linkableUser } from "../account/federation-writes";
import { ApiError } from "../base/errors";
import { homeDatabase } from "../db/shards";
import { database, dbOf } from "../db/client";
import { findProvider, listUserLinks } from "../db/federation";
import { MAX_IDENTITY_PROVIDERS_CEILING } from "../base/limits";
import { verifyIdToken } from "./id-tokens";
import { defineOperation } from "./operation";
import { mapOf, timestampOut, uuid, uuidOut, withMeta } from "./schemas";

// Links: which user of the account a provider's subject is (docs/sign-in.md). A caller manages
// its own links and those of the users it could manage (docs/permission-model.md); making
// one needs a User Secret, since a link outlives any token.

const linkRecord = withMeta(z.object({ provider: uuidOut, subject: z.string(), created_ts: timestampOut }), {
	id: "ExternalId",
});
const subject = z.string().check(z.minLength(1), z.maxLength(255));
const USER_RULE = "The user is the caller itself or one the caller could manage (give its role and description).";

export const createUserExternalId = defineOperation({
	name: "create_user_external_id",
	summary: "Link a user to a subject of an identity provider",
	description: `Links the user to a subject of one of the account's identity providers, so that the subject's ID tokens sign in as the user. ${USER_RULE} A user other than the administrator links itself with subject_token, an ID token of the subject, never with subject. Needs a User Secret.`,
	refuses: [
		"credential_forbidden",
		"escalation",
		"not_found",
		"conflict",
		"untrusted_token",
		"unverifiable_token",
		"id_token_expired",
		"id_token_early",
		"id_token_subject",
		"provider_keys_unreachable",
	],
	example: { provider: "0b7a1f4e-2c3d-4e5f-8a9b-0c1d2e3f4a5b", subject: "auth0|5f1c2b3a4d5e" },
	auth: "secret",
	status: 201,
	params: z.strictObject({ user: uuid }),
	response: linkRecord,
	body: z
		.strictObject({
			provider: uuid,
			subject: z.optional(subject),
			subject_token: z.optional(z.string().check(z.minLength(1), z.maxLength(8192))),
		})
		.check(
			z.refine(
				(body) => (body.subject === undefined) !== (body.subject_token === undefined),
				"Give exactly one of subject and subject_token",
			),
		),
	async run({ params, body }, ctx) {
		if (ctx.caller.credential!.type !== "secret") {
			throw new ApiError("credential_forbidden", {
				description: "A link outlives the token: make it with a User Secret",
			});
		}
		const db = dbOf(ctx);
		// Checked before the token is: nobody learns about a user or provider it may not touch.
		await linkableUser(db, ctx.caller, params.user);
		if (!(await findProvider(db, ctx.caller.account, body.provider)))
			throw new ApiError("not_found", { description: "No such identity provider" });
		let linked = body.subject;
		if (body.subject_token !== undefined)
			linked = (
				await verifyIdToken(
					database(homeDatabase(ctx.env, ctx.caller.account)),
					ctx.caller.account,
					body.subject_token,
					body.provider,
				)
			).subject;
		const link = { provider: body.provider, subject: linked!, proven: body.subject_token !== undefined };
		return accountClient(ctx, ctx.caller.account).createLink(ctx.caller, params.user, link);
	},
});

export const getUserExternalIds = defineOperation({
	name: "get_user_external_ids",
	summary: "A user's links to identity providers' subjects",
	description: `The user's links, by provider. ${USER_RULE}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: z.strictObject({ user: uuid }),
	response: z.object({
		external_ids: mapOf(z.object({ subject: z.string(), created_ts: timestampOut }), MAX_IDENTITY_PROVIDERS_CEILING),
	}),
	async run({ params }, ctx) {
		const db = dbOf(ctx);
		await linkableUser(db, ctx.caller, params.user);
		const rows = await listUserLinks(db, ctx.caller.account, params.user);
		return {
			external_ids: Object.fromEntries(
				rows.map((row) => [row.provider, { subject: row.subject, created_ts: row.created_ts }]),
			),
		};
	},
});

export const deleteUserExternalId = defineOperation({
	name: "delete_user_external_id",
	summary: "Unlink a user from an identity provider (the tokens signed in through the link end)",
	description: `Deletes the user's link at the provider: the User Tokens its exchanges gave end at once. ${USER_RULE} A User Token may do it: revoking widens nothing.`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: z.strictObject({ user: uuid, provider: uuid }),
	response: linkRecord,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteLink(ctx.caller, params.user, params.provider);
	},
});
