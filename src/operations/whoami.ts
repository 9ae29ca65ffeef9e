import * as z from "zod";
import { defineOperation } from "./operation";
import { uuidOut } from "./schemas";

export const whoAmI = defineOperation({
	name: "who_am_i",
	summary: "The calling user's account, user and role",
	auth: "secret",
	response: z.object({ account: uuidOut, user: uuidOut, role: uuidOut }),
	async run(_input, { caller }) {
		return { account: caller.account, user: caller.user, role: caller.role };
	},
});
