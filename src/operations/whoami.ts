import { defineOperation } from "./operation";

export const whoAmI = defineOperation({
	name: "who_am_i",
	summary: "The calling user's account, user and role",
	auth: "secret",
	async run(_input, { caller }) {
		return { account: caller.account, user: caller.user, role: caller.role };
	},
});
