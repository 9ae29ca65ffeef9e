import * as z from "zod/mini";
import { defineOperation } from "./operation";
import { uuidOut } from "./schemas";

export const whoAmI = defineOperation({
	name: "who_am_i",
	summary: "The calling user's account, user and role",
	description:
		"The account, user and role of the credential the request carries: what to call first to check a credential.",
	auth: "secret",
	response: z.object({ account: uuidOut, user: uuidOut, role: uuidOut }),
	async run(_input, { caller }) {
		return { account: caller.account, user: caller.user, role: caller.role };
	},
});
