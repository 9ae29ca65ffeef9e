import type { IdentityChanges } from "../../db/identities";
import type { TwinView } from "../../rules/visibility";
import type { CallerId, Host } from "../host";
import * as identities from "../identity-writes";

// The account's object's identity writes (docs/operations.md "Identities"): on any twin the
// account can see, which the caller has checked.
export function identityFacet(host: Host) {
	return {
		createIdentities(caller: CallerId, twin: TwinView, input: identities.IdentityInput) {
			return host.write(caller, "create_twin_identity", (db, current, meter) =>
				identities.createIdentities(db, meter, current, twin, input),
			);
		},

		updateIdentity(caller: CallerId, twin: string, identity: string, changes: IdentityChanges) {
			return host.write(caller, "update_twin_identity", (db) =>
				identities.updateIdentity(db, caller.account, twin, identity, changes),
			);
		},

		deleteIdentity(caller: CallerId, twin: string, identity: string) {
			return host.write(caller, "delete_twin_identity", (db) =>
				identities.removeIdentity(db, caller.account, twin, identity),
			);
		},
	};
}
