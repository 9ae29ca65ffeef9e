import * as z from "zod/mini";
import { findUser, listUsers } from "../db/users";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { defineOperation } from "./operation";
import { MAX_USERS_CEILING } from "../base/limits";
import {
	mapOf,
	description,
	descriptionPatch,
	timestampOut,
	unsupportedSetting,
	userRecord,
	uuid,
	uuidOut,
} from "./schemas";
import { dbOf } from "../db/client";

const userParams = z.strictObject({ user: uuid });
const userName = z.string().check(z.trim(), z.minLength(1), z.maxLength(128));

export const createUser = defineOperation({
	name: "create_user",
	summary: "Create a user in the caller's account",
	description:
		"Creates a user in the caller's account holding an existing role of it. The caller must be able to grant that role (no escalation: its statement and rules no wider than the caller's).",
	refuses: ["escalation", "not_found", "user_limit"],
	example: { name: "Alice", role: "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b", description: { team: "ops" } },
	auth: "secret",
	status: 201,
	response: userRecord,
	body: z.strictObject({
		name: userName,
		role: uuid,
		description: z.optional(description),
		activity: z.optional(unsupportedSetting),
	}),
	async run({ body }, ctx) {
		// Giving a role is a role write: it goes through the account's object.
		const input = { ...body, description: body.description ?? {}, activity: body.activity ?? null };
		return accountClient(ctx, ctx.caller.account).createUser(ctx.caller, input);
	},
});

export const getUsers = defineOperation({
	name: "get_users",
	summary: "List the users of the caller's account",
	description: "Every user of the caller's account by uuid, with name, role and timestamps.",
	auth: "secret",
	response: z.object({
		users: mapOf(
			z.object({ name: z.string(), role: uuidOut, created_ts: timestampOut, updated_ts: timestampOut }),
			MAX_USERS_CEILING,
		),
	}),
	async run(_input, ctx) {
		const rows = await listUsers(dbOf(ctx), ctx.caller.account);
		const usersByUuid = Object.fromEntries(
			rows.map((u) => [u.uuid, { name: u.name, role: u.role, created_ts: u.created_ts, updated_ts: u.updated_ts }]),
		);
		return { users: usersByUuid };
	},
});

export const getUser = defineOperation({
	name: "get_user",
	summary: "A user of the caller's account",
	description: "A user of the caller's account: its record with role and description.",
	refuses: ["not_found"],
	auth: "secret",
	response: userRecord,
	params: userParams,
	async run({ params }, ctx) {
		const found = await findUser(dbOf(ctx), ctx.caller.account, params.user);
		if (!found) throw new ApiError("not_found", { description: "No such user" });
		return found;
	},
});

const userChanges = { name: z.optional(userName), role: z.optional(uuid), activity: z.optional(unsupportedSetting) };

export const updateUser = defineOperation({
	name: "update_user",
	summary:
		"Change a user's name, role or description (a given description replaces the old one, a merge patch merges into it)",
	description:
		"Changes a user's name, role or description; a given description replaces the old one, or, sent as application/merge-patch+json, merges into it (RFC 7396: null removes a key; at most 32 KiB once merged). The caller must be able to grant both the user's role and the new one, for the user as it becomes; a user changes its own description only when its role's rules do not read USER., or as administrator. A role or description change revokes the user's unredeemed PINs.",
	refuses: ["escalation", "not_found"],
	example: { name: "Alice B.", description: { team: "field" } },
	auth: "secret",
	response: userRecord,
	params: userParams,
	body: z.strictObject({ ...userChanges, description: z.optional(description) }),
	merge: {
		body: z.strictObject({ ...userChanges, description: z.optional(descriptionPatch) }),
		example: { description: { team: "field", shift: null } },
	},
	async run({ params, body, merge }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateUser(ctx.caller, params.user, body, merge);
	},
});

export const deleteUser = defineOperation({
	name: "delete_user",
	summary: "Delete a user with its secret",
	description:
		"Deletes a user of the caller's account with its secret, whose credentials stop working at once. The caller must be able to grant the user's role and may not delete itself.",
	refuses: ["escalation", "not_found", "conflict"],
	auth: "secret",
	response: userRecord,
	params: userParams,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteUser(ctx.caller, params.user);
	},
});
