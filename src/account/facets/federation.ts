import { accountLimit, MAX_IDENTITY_PROVIDERS_CEILING } from "../../base/limits";
import { refuseIfMoving } from "../../db/shards";
import { CLOSE } from "../../notifications/streams/frames";
import * as federation from "../federation-writes";
import type { CallerId, Host } from "../host";

// The account's object's identity providers and links (docs/sign-in.md). A provider changed or
// deleted ends the streams of the tokens its exchanges gave; a link deleted, its user's streams
// resting on it (they reconnect with what still stands).
export function federationFacet(host: Host, maxUsers: () => number) {
	const ended = (account: string, rest: { provider: string; user?: string }) => ({
		account,
		...rest,
		code: CLOSE.credentialEnded,
	});

	return {
		createProvider(caller: CallerId, input: federation.ProviderInput) {
			const limit = accountLimit(host.env.MAX_IDENTITY_PROVIDERS, MAX_IDENTITY_PROVIDERS_CEILING);
			return host.write(caller, "create_identity_provider", (db, current) =>
				federation.createProvider(db, current, input, limit),
			);
		},

		updateProvider(caller: CallerId, provider: string, changes: Partial<federation.ProviderInput>) {
			const write = host.write(caller, "update_identity_provider", (db, current) =>
				federation.updateProvider(db, current, provider, changes),
			);
			return host.tellStreams(write, () => ended(caller.account, { provider }));
		},

		deleteProvider(caller: CallerId, provider: string) {
			const write = host.write(caller, "delete_identity_provider", (db, current) =>
				federation.deleteProvider(db, current, provider),
			);
			return host.tellStreams(write, () => ended(caller.account, { provider }));
		},

		createLink(caller: CallerId, user: string, link: { provider: string; subject: string; proven: boolean }) {
			return host.write(caller, "create_user_external_id", (db, current) =>
				federation.createLink(db, current, user, link),
			);
		},

		deleteLink(caller: CallerId, user: string, provider: string) {
			const write = host.write(caller, "delete_user_external_id", (db, current) =>
				federation.deleteLink(db, current, user, provider),
			);
			return host.tellStreams(write, () => ended(caller.account, { user, provider }));
		},

		// An exchange's user for a subject nobody is linked to yet, made once however many
		// exchanges of it arrive together.
		provision(provisioning: federation.Provisioning) {
			return host.serialized(async (db) => {
				// No credential query read the account's move row for an exchange: it is read here,
				// before the new user is written (docs/scaling.md, "Moving a bucket").
				await refuseIfMoving(host.home(), provisioning.account);
				const made = await federation.provision(db, provisioning, maxUsers());
				if (made.provisioned) host.record(made.user, "exchange_user_token", made.user);
				return made;
			});
		},
	};
}
