import type { Database } from "../db/client";
import type { secretPins } from "../db/schema";
import { deleteSecret, replacePin, setSecretValidity } from "../db/secrets";
import { ApiError } from "../base/errors";
import { manageableUser } from "./guards";
import type { Caller } from "../base/caller";
import { now } from "../base/time";

// Writes to users' credentials, run by AccountDO one at a time with the role and user writes:
// a PIN or a secret is a way into a user, so managing another user's needs the right to
// manage that user, checked in the same serialized step as the write.

export type PinInput = Omit<typeof secretPins.$inferInsert, "account" | "user">;

// A PIN made with a User Token would redeem into a secret that outlives the token and drops
// its dictionary: refused whatever the role, before anything is read.
export async function issuePin(db: Database, caller: Caller, user: string, pin: PinInput) {
	if (caller.credential?.type === "token") {
		throw new ApiError("credential_forbidden", {
			description: "A PIN can only be issued with a User Secret, not a User Token",
		});
	}
	await manageableUser(db, caller, user);
	await replacePin(db, { ...pin, account: caller.account, user });
	return { user };
}

// One's own secret needs no check beyond authentication: it grants nothing new.
async function ownOrManageable(db: Database, caller: Caller, user: string) {
	if (user !== caller.user) await manageableUser(db, caller, user);
}

export async function changeSecretValidity(db: Database, caller: Caller, user: string, validity_ts: number | null) {
	await ownOrManageable(db, caller, user);
	const row = await setSecretValidity(db, caller.account, user, validity_ts, now());
	if (!row) throw new ApiError("not_found", { description: "No such user secret" });
	return row;
}

export async function removeSecret(db: Database, caller: Caller, user: string) {
	await ownOrManageable(db, caller, user);
	const row = await deleteSecret(db, caller.account, user);
	if (!row) throw new ApiError("not_found", { description: "No such user secret" });
	return row;
}
