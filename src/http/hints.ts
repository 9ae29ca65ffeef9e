import { type Caller, principalOf } from "../base/caller";
import type { CredentialFound } from "../policy/credential";

// Which caller a credential (its hash) stood for when it was last checked, per isolate. Only a
// guess: it picks the account's object and the page SQL to try, and the object checks the
// credential itself in the same D1 batch as its read (see `checksCredential` in operation.ts), so a
// deleted secret or a changed role counts from the very next request.
const MAX_GUESSES = 10_000;
const guesses = new Map<string, CredentialFound>();

export function guessCaller(hash: string): CredentialFound | undefined {
	return guesses.get(hash);
}

// Only what the credential's row said: a request's dictionary and token are its own. Only a
// credential that rests on a secret alone is remembered: the object checks the guess by the
// secret's hash.
export function rememberCaller(caller: Caller) {
	const { binding, fingerprint, validity_ts } = caller.credential!;
	if (binding.kind !== "secret" || fingerprint === null) return;
	const { hash, created_ts } = binding;
	guesses.delete(hash);
	guesses.set(hash, { ...principalOf(caller), fingerprint, validity_ts, created_ts, hash });
	// Insertion order: the first key is the one remembered longest ago.
	if (guesses.size > MAX_GUESSES) guesses.delete(guesses.keys().next().value as string);
}

export function forgetCaller(hash: string) {
	guesses.delete(hash);
}
