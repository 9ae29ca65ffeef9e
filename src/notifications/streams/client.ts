import type { CloseCode } from "./frames";
import type { ReaderOf } from "./readers";

// How the Worker and the account's object reach the stream objects (object.ts), without
// loading it: the operations, and the API document built from them, load outside the runtime.

// The internal request that opens a stream carries what the Worker checked, in this header.
export const OPEN_HEADER = "x-stream-open";

// What the Worker checked and the object needs. `since`: the resume point, null for none,
// "unknown" for one that cannot be read (a malformed Last-Event-ID). `ends`: when the
// credential stops working, the secret's validity apart (it can change while the stream runs).
export type StreamOpen = {
	publisher: string;
	account: string;
	user: string;
	role: string;
	topics: string[];
	since: number | null | "unknown";
	sse: boolean;
	ends: { own: number | null; secret: number | null };
	// The identity provider a federated credential rests on (docs/sign-in.md): any change to the
	// provider ends the stream.
	provider?: string;
	// Who issued the credential's token for the user (issue_user_token): its secret ending, or
	// its deletion, ends the stream.
	actor?: string;
	// MAX_STREAMS: the subscribing account's streams on this publishing account.
	limit: number;
	// Who the stream reads as: a reader its role confines gets each message filtered.
	reader: ReaderOf;
};

// What changes streams of an account's users: `code` closes them (all of `user`'s and those of
// the tokens it issued, the holders of `role`, or those resting on `provider`); `validity_ts` is `user`'s secret's new validity; `reader` is what `user`,
// or the holders of `role`, now are (the streams stay open, and read as that from the next
// message).
export type StreamChange = { account: string; user?: string; role?: string; provider?: string } & (
	| { code: CloseCode }
	| { user: string; validity_ts: number | null }
	| { reader: Partial<ReaderOf> }
);

// Opens a checked stream on the publisher's object: 101 with the socket, or 409 (the limit).
export function connectStream(env: Env, open: StreamOpen): Promise<Response> {
	return env.STREAMS.getByName(open.publisher).fetch("https://streams.internal/connect", {
		headers: { upgrade: "websocket", [OPEN_HEADER]: JSON.stringify(open) },
	});
}

// After a change to who a user is or what it may do, committed: its streams end (or learn
// their secret's new validity), on its own account's object and every object it streams from.
// A failure is logged, never the write's: the change stands, and a stream's credential is
// checked again when it reconnects.
export async function revokeStreams(env: Env, change: StreamChange) {
	try {
		await env.STREAMS.getByName(change.account).revoke(change);
	} catch (error) {
		console.error(JSON.stringify({ streams: change.account, revoke: change, error: String(error) }));
	}
}

// After `publisher` replaced the topics it grants `grantee`: the grantee's streams reading
// another topic end.
export async function revokeUngranted(env: Env, publisher: string, grantee: string, topics: string[]) {
	try {
		await env.STREAMS.getByName(publisher).ungranted(grantee, topics);
	} catch (error) {
		console.error(JSON.stringify({ streams: publisher, ungranted: grantee, error: String(error) }));
	}
}
