import * as z from "zod/mini";
import { findRole, listRoles } from "../db/roles";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { STATEMENT_VOCABULARY } from "../policy/vocabulary";
import { defineOperation } from "./operation";
import { DEFAULT_STATEMENT } from "./roles-defaults";
import { MAX_ROLES_CEILING } from "../base/limits";
import { mapOf, roleRecord, ruleText, timestampOut, uuid } from "./schemas";
import { dbOf } from "../db/client";

const ROLE_NAME = /^[0-9A-Za-z][0-9A-Za-z_ -]{0,30}[0-9A-Za-z]$/;

const roleName = z
	.string()
	.check(z.regex(ROLE_NAME, "Must be 2 to 32 characters: letters, digits, '_', '-' and spaces inside"));

// Given rules replace all three; one not supplied is null.
const rule = z.optional(z.nullable(ruleText));
const rulesObject = z.nullable(z.strictObject({ twin: rule, entry: rule, identity: rule }));
type RulesInput = z.infer<typeof rulesObject>;
const allRules = (r: RulesInput | undefined) => ({
	twin: r?.twin ?? null,
	entry: r?.entry ?? null,
	identity: r?.identity ?? null,
});

const effect = z.enum(["allow", "deny"], "Must be 'allow' or 'deny'");
const actions = z.nullable(
	z.pipe(
		z.array(z.enum(STATEMENT_VOCABULARY as [string, ...string[]], "Unknown operation name")),
		// A name listed twice means what it means once; kept once, a statement is bounded.
		z.transform((names) => [...new Set(names)]),
	),
);
const statement = z.strictObject({ effect, actions });

const roleParams = z.strictObject({ role: uuid });

export const createUserRole = defineOperation({
	name: "create_user_role",
	summary: "Create a role; its statement may not allow more than the caller's own",
	description:
		"Creates a role in the caller's account. Its statement may not allow an action the caller cannot call, and its rules must be the caller's own or narrow them as (<caller's rule>) and (...), unless the caller is the administrator. Rules are parsed here: a malformed one is 400 with its position.",
	refuses: ["escalation", "role_limit"],
	example: {
		name: "Reader",
		rules: { twin: "TWIN.site == USER.site" },
		statement: { effect: "allow", actions: ["get_twin", "scan_twins"] },
	},
	auth: "secret",
	response: roleRecord,
	status: 201,
	body: z.strictObject({
		name: roleName,
		rules: z.pipe(z.optional(rulesObject), z.transform(allRules)),
		statement: z.optional(statement),
	}),
	async run({ body }, ctx) {
		const input = { name: body.name, rules: body.rules, statement: body.statement ?? DEFAULT_STATEMENT };
		return accountClient(ctx, ctx.caller.account).createRole(ctx.caller, input);
	},
});

export const getUserRoles = defineOperation({
	name: "get_user_roles",
	summary: "List the roles of the caller's account",
	description: "Every role of the caller's account by uuid, with name and timestamps.",
	auth: "secret",
	response: z.object({
		roles: mapOf(z.object({ name: z.string(), created_ts: timestampOut, updated_ts: timestampOut }), MAX_ROLES_CEILING),
	}),
	async run(_input, ctx) {
		const rows = await listRoles(dbOf(ctx), ctx.caller.account);
		return {
			roles: Object.fromEntries(
				rows.map((r) => [r.uuid, { name: r.name, created_ts: r.created_ts, updated_ts: r.updated_ts }]),
			),
		};
	},
});

export const getUserRole = defineOperation({
	name: "get_user_role",
	summary: "A role of the caller's account",
	description: "A role of the caller's account: its rules and statement.",
	refuses: ["not_found"],
	auth: "secret",
	response: roleRecord,
	params: roleParams,
	async run({ params }, ctx) {
		const role = await findRole(dbOf(ctx), ctx.caller.account, params.role);
		if (!role) throw new ApiError("not_found", { description: "No such role" });
		return role;
	},
});

export const updateUserRole = defineOperation({
	name: "update_user_role",
	summary: "Change a role's name, rules or statement (given rules replace all three, a merge patch those it names)",
	description:
		'Changes a role\'s name, rules or statement; given rules replace all three. Sent as application/merge-patch+json (RFC 7396), rules merge by kind (null clears one; "rules": null all three) and the statement by member (effect replaces, actions replaces whole; "statement": null is 400101). The role as it is and as it becomes, whole, must both be ones the caller could grant.',
	refuses: ["escalation", "not_found"],
	example: { statement: { effect: "allow", actions: ["get_twin", "scan_twins", "who_am_i"] } },
	auth: "secret",
	response: roleRecord,
	params: roleParams,
	body: z.strictObject({
		name: z.optional(roleName),
		rules: z.pipe(
			z.optional(rulesObject),
			z.transform((r) => (r === undefined ? undefined : allRules(r))),
		),
		statement: z.optional(statement),
	}),
	// The account's object merges what it is given into the stored role; the replacement above
	// gives every rule and the whole statement.
	merge: {
		body: z.strictObject({
			name: z.optional(roleName),
			rules: z.optional(rulesObject),
			statement: z.optional(z.strictObject({ effect: z.optional(effect), actions: z.optional(actions) })),
		}),
		example: { rules: { entry: null }, statement: { actions: ["get_twin", "scan_twins"] } },
	},
	async run({ params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateRole(ctx.caller, params.role, body);
	},
});

export const deleteUserRole = defineOperation({
	name: "delete_user_role",
	summary: "Delete a role no user holds",
	description: "Deletes a role of the caller's account that no user holds; the caller must be able to grant it.",
	refuses: ["escalation", "not_found", "conflict"],
	auth: "secret",
	response: roleRecord,
	params: roleParams,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteRole(ctx.caller, params.role);
	},
});
