import type { SubscriptionRow } from "../db/subscriptions";
import { signingKey } from "./hash";
import { open, seal } from "./seal";

// For 24 hours after a rotation, messages carry a signature with the previous key too, so a
// receiver can switch to the new secret when it likes within that day.
export const ROTATION_OVERLAP_SECONDS = 86_400;

// The keys to sign with at `at`: the current one first, then the previous one while it lasts.
// A subscription without a client_secret has none.
export async function signingKeys(env: Env, row: SubscriptionRow, at: number): Promise<Uint8Array[]> {
	const keys: Uint8Array[] = [];
	if (row.sealed_key) keys.push(new TextEncoder().encode(await open(env, row.uuid, "key", row.sealed_key)));
	if (keys.length && row.sealed_previous_key && (row.previous_key_until ?? 0) > at) {
		keys.push(new TextEncoder().encode(await open(env, row.uuid, "key", row.sealed_previous_key)));
	}
	return keys;
}

export function sealKey(env: Env, subscription: string, clientSecret: string, serverSecret: string) {
	return seal(env, subscription, "key", new TextDecoder().decode(signingKey(clientSecret, serverSecret)));
}
