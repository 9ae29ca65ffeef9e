import * as z from "zod";
import { findUser, listUsers } from "../db/users";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { defineOperation } from "./operation";
import { MAX_USERS_CEILING } from "../base/limits";
import { mapOf, description, timestampOut, unsupportedSetting, userRecord, uuid, uuidOut } from "./schemas";

const userParams = z.strictObject({ user: uuid });
const userName = z.string().trim().min(1).max(128);

export const createUser = defineOperation({
	name: "create_user",
	summary: "Create a user in the caller's account",
	auth: "secret",
	status: 201,
	response: userRecord,
	body: z.strictObject({ name: userName, role: uuid, description: description.optional(), activity: unsupportedSetting.optional() }),
	async run({ body }, ctx) {
		// Giving a role is a role write: it goes through the account's object.
		const input = { ...body, description: body.description ?? {}, activity: body.activity ?? null };
		return accountClient(ctx, ctx.caller.account).createUser(ctx.caller, input);
	},
});

export const getUsers = defineOperation({
	name: "get_users",
	summary: "List the users of the caller's account",
	auth: "secret",
	response: z.object({
		users: mapOf(z.object({ name: z.string(), role: uuidOut, created_ts: timestampOut, updated_ts: timestampOut }), MAX_USERS_CEILING),
	}),
	async run(_input, ctx) {
		const rows = await listUsers(ctx.db, ctx.caller.account);
		const usersByUuid = Object.fromEntries(
			rows.map((u) => [u.uuid, { name: u.name, role: u.role, created_ts: u.created_ts, updated_ts: u.updated_ts }]),
		);
		return { users: usersByUuid };
	},
});

export const getUser = defineOperation({
	name: "get_user",
	summary: "A user of the caller's account",
	auth: "secret",
	response: userRecord,
	params: userParams,
	async run({ params }, ctx) {
		const found = await findUser(ctx.db, ctx.caller.account, params.user);
		if (!found) throw new ApiError("not_found", { description: "No such user" });
		return found;
	},
});

export const updateUser = defineOperation({
	name: "update_user",
	summary: "Change a user's name, role or description (a given description replaces the old one)",
	auth: "secret",
	response: userRecord,
	params: userParams,
	body: z.strictObject({
		name: userName.optional(),
		role: uuid.optional(),
		description: description.optional(),
		activity: unsupportedSetting.optional(),
	}),
	async run({ params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateUser(ctx.caller, params.user, body);
	},
});

export const deleteUser = defineOperation({
	name: "delete_user",
	summary: "Delete a user with its secret",
	auth: "secret",
	response: userRecord,
	params: userParams,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteUser(ctx.caller, params.user);
	},
});
