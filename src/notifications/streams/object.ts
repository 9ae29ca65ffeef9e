import type { StreamRow } from "../../db/outbox";
import { CLOSE, type CloseCode, endFrame, frame, REASONS, ackOf, resyncFrame } from "./frames";
import { type Message, StreamLog } from "./log";
import { OPEN_HEADER, type StreamChange, type StreamOpen } from "./client";
import { Readers, Turn } from "./readers";

// One object per publishing account (named by its uuid): the log of its recent messages and
// every stream reading them, each a WebSocket accepted with the Hibernation API, so that idle
// streams cost no compute (the object is evicted while its sockets are idle; the runtime
// answers pings). A browser's SSE stream is a WebSocket too, opened by the Worker, which turns
// frames into events (sse.ts). The object is also its account's directory of the other
// accounts' objects its users stream from, so that a change to a user reaches all its streams.

// A user's streams on one publishing account; one more replaces its oldest.
export const MAX_STREAMS_PER_USER = 10;
// What a reader may have been sent and not acknowledged; past it the object holds messages in
// the log, and past it again in live messages held, the reader is dropped (4408).
export const WINDOW_MESSAGES = 1000;
export const WINDOW_BYTES = 4 * 1024 * 1024;

// A stream's state, kept with its socket (serializeAttachment) so that it outlives hibernation.
// `reader`: the id of its reader's row (readers.ts). `sent`: the last id sent (or the position it
// started from); `passed`: the last id it has gone past, sent or filtered away; `acked`: the
// last acknowledged; `unacked`, `unackedBytes`: what was sent after it. `behind`: messages for
// it wait in the log; `held`, `heldBytes`: how many of those arrived live (after `liveFrom`,
// the log's newest id when it opened), which is what may drop it; `deferred`: they wait for a
// turn with work left for its filter.
type Stream = Omit<StreamOpen, "publisher" | "since" | "limit" | "reader"> & {
	reader: string;
	opened: number;
	sent: number;
	passed: number;
	acked: number;
	unacked: number;
	unackedBytes: number;
	behind: boolean;
	liveFrom: number;
	held: number;
	heldBytes: number;
	deferred: boolean;
};

const endOf = (s: Stream) => {
	const ends = [s.ends.own, s.ends.secret].filter((t): t is number => t !== null);
	return ends.length ? Math.min(...ends) : null;
};

const encoder = new TextEncoder();

export class StreamObject {
	private readonly log: StreamLog;
	private readonly readers: Readers;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {
		this.log = new StreamLog(ctx.storage);
		this.readers = new Readers(ctx.storage.sql);
		ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS publishers (account TEXT PRIMARY KEY, seq INTEGER NOT NULL)");
		// Answered by the runtime without waking the object.
		ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
	}

	// Opens a stream the Worker has checked: the per-user and per-account limits, the socket
	// accepted and registered (every message appended from now on reaches it), the replay or
	// a resync. Answers 101 with the socket, or 409 when the subscribing account is at its limit.
	async fetch(request: Request): Promise<Response> {
		const header = request.headers.get(OPEN_HEADER);
		if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || header === null)
			return new Response(null, { status: 426 });
		const open = JSON.parse(header) as StreamOpen;
		const at = Date.now();
		this.log.prune(at / 1000);
		const mine = this.open(`user:${open.user}`);
		const replacing = mine.length >= MAX_STREAMS_PER_USER ? oldest(mine) : undefined;
		if (!replacing && this.open(`acct:${open.account}`).length >= open.limit)
			return Response.json({ limit: open.limit }, { status: 409 });

		const { 0: client, 1: server } = new WebSocketPair();
		this.ctx.acceptWebSocket(server, [
			...open.topics.map((t) => `topic:${t}`),
			`user:${open.user}`,
			`acct:${open.account}`,
		]);
		const lastId = this.log.lastId();
		const { since } = open;
		const resync = since === "unknown" || (since !== null && (since > lastId || since < this.log.prunedAbove()));
		const start = since === null || resync ? lastId : since;
		const { publisher: _, since: __, limit: ___, reader: principal, ...who } = open;
		const reader = crypto.randomUUID();
		this.readers.add(reader, principal);
		const stream: Stream = {
			...who,
			reader,
			opened: at,
			sent: start,
			passed: start,
			acked: start,
			unacked: 0,
			unackedBytes: 0,
			behind: true,
			liveFrom: lastId,
			held: 0,
			heldBytes: 0,
			deferred: false,
		};
		if (resync) server.send(resyncFrame(lastId, open.sse));
		const turn = this.turn();
		this.pump(server, stream, turn);
		if (replacing) this.end(replacing, CLOSE.replaced);
		await this.armFor(stream);
		await this.settle(turn);
		// Another account's first stream here: its own object learns that changes to its users
		// must reach this one too.
		if (open.account !== open.publisher && this.open(`acct:${open.account}`).length === 1) {
			await this.env.STREAMS.getByName(open.account).notePublisher(open.publisher);
		}
		return new Response(null, { status: 101, webSocket: client });
	}

	// The messages of outbox rows, in commit order; idempotent. Each reaches the streams of its
	// topic at once (a confined reader's filtered), or waits in the log for a reader that is
	// behind.
	async append(account: string, rows: StreamRow[]) {
		const added = this.log.append(account, rows, Date.now() / 1000);
		const turn = this.turn();
		for (const message of added) {
			for (const ws of this.open(`topic:${message.topic}`)) this.deliver(ws, message, turn);
		}
		await this.settle(turn);
		return added.length;
	}

	private deliver(ws: WebSocket, m: Message, turn: Turn) {
		const s = ws.deserializeAttachment() as Stream;
		const data = s.behind ? undefined : this.dataFor(s, m, turn);
		if (data === null) {
			// Filtered away: nothing is written, and the stream has gone past it.
			s.passed = m.id;
		} else if (data !== undefined && fits(s, utf8(data, m))) {
			this.send(ws, s, m, data);
		} else {
			// Behind, its window full, or its filter out of work this turn: the message waits.
			s.deferred ||= data === undefined && !s.behind;
			s.behind = true;
			s.held++;
			s.heldBytes += m.bytes;
			if (s.held > WINDOW_MESSAGES || s.heldBytes > WINDOW_BYTES) return this.end(ws, CLOSE.tooFarBehind);
		}
		ws.serializeAttachment(s);
	}

	private send(ws: WebSocket, s: Stream, m: Message, data: string) {
		ws.send(frame({ id: m.id, event: m.event, data }, s.sse));
		s.sent = s.passed = m.id;
		s.unacked++;
		s.unackedBytes += utf8(data, m);
	}

	// Sends what waits in the log for a stream, while its window allows and its filter has work
	// left this turn.
	private pump(ws: WebSocket, s: Stream, turn: Turn) {
		let full = false;
		s.deferred = false;
		for (const m of this.log.after(s.passed, s.topics)) {
			const data = this.dataFor(s, m, turn);
			if (data === undefined) {
				full = s.deferred = true;
				break;
			}
			if (data !== null && !fits(s, utf8(data, m))) {
				full = true;
				break;
			}
			if (data === null) s.passed = m.id;
			else this.send(ws, s, m, data);
			if (m.id > s.liveFrom) {
				s.held = Math.max(0, s.held - 1);
				s.heldBytes = Math.max(0, s.heldBytes - m.bytes);
			}
		}
		s.behind = full;
		ws.serializeAttachment(s);
	}

	// What the stream's reader is sent of `m` (readers.ts); a stream whose reader is gone gets
	// nothing more.
	private dataFor(s: Stream, m: Message, turn: Turn): string | null | undefined {
		const reader = this.readers.get(s.reader);
		return reader ? turn.dataFor(reader, m) : null;
	}

	private turn() {
		return new Turn(this.log, Date.now() / 1000);
	}

	// A turn that left messages waiting for work: the alarm takes them up at once.
	private async settle(turn: Turn) {
		if (!turn.deferred) return;
		const current = await this.ctx.storage.getAlarm();
		if (current === null || current > Date.now()) await this.ctx.storage.setAlarm(Date.now());
	}

	// An acknowledgement frees the window up to its id; anything else a client sends ends it.
	// The runtime shows nothing of what it still buffers for a socket (docs/streams.md), so the
	// window is only as true as the acks: an ack must name a message this socket was sent. One
	// past the last sent, or of an id that is no message of its topics, claims a read that
	// cannot have happened, and the reader is dropped as one too far behind (4408).
	async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer) {
		const id = ackOf(message);
		if (id === undefined) return this.end(ws, CLOSE.unexpectedFrame);
		const s = ws.deserializeAttachment() as Stream;
		if (id > s.sent) return this.end(ws, CLOSE.tooFarBehind);
		// An id the log has pruned cannot be checked, and is taken as it is.
		if (id > s.acked && id > this.log.prunedAbove() && !this.log.holds(id, s.topics))
			return this.end(ws, CLOSE.tooFarBehind);
		if (id > s.acked) {
			s.acked = id;
			// Everything sent acknowledged, the usual case, needs no look at the log. The log also
			// counts what a filter kept from this reader, so it only ever bounds the count from above.
			const between = id === s.sent ? { count: 0, bytes: 0 } : this.log.between(s.acked, s.sent, s.topics);
			s.unacked = Math.min(s.unacked, between.count);
			s.unackedBytes = Math.min(s.unackedBytes, between.bytes);
		}
		if (!s.behind) return ws.serializeAttachment(s);
		// What it waited for may have been pruned meanwhile: it resumes, and learns of the gap.
		if (s.passed < this.log.prunedAbove()) return this.end(ws, CLOSE.tooFarBehind);
		const turn = this.turn();
		this.pump(ws, s, turn);
		await this.settle(turn);
	}

	webSocketClose(ws: WebSocket) {
		this.forget(ws);
		try {
			ws.close(1000, "closed");
		} catch {
			// Already closing: the object ended it.
		}
	}

	// Credentials that ended at their time: their streams close (4401). Streams whose messages
	// waited for a turn with work left for their filter are sent them. The alarm is then set for
	// the earliest credential still running, or at once while messages still wait.
	async alarm() {
		const at = Date.now() / 1000;
		let next = Infinity;
		const turn = this.turn();
		for (const ws of this.open()) {
			const s = ws.deserializeAttachment() as Stream;
			const end = endOf(s);
			if (end !== null && end <= at) {
				this.end(ws, CLOSE.credentialEnded);
				continue;
			}
			if (end !== null) next = Math.min(next, end);
			if (s.deferred) this.pump(ws, s, turn);
		}
		if (turn.deferred) next = at;
		if (next < Infinity) await this.ctx.storage.setAlarm(Math.ceil(next * 1000));
		else await this.ctx.storage.deleteAlarm();
	}

	// A change to users of `change.account`, called on that account's own object: its streams
	// here, and in every object it streams from.
	async revoke(change: StreamChange) {
		const since = this.publisherSeq();
		await this.apply(change);
		const publishers = this.ctx.storage.sql.exec<{ account: string }>("SELECT account FROM publishers").toArray();
		const left = await Promise.allSettled(
			publishers.map(({ account }) => this.env.STREAMS.getByName(account).apply(change)),
		);
		left.forEach((result, i) => {
			// No stream of the account left there: forget it, unless one opened since.
			if (result.status === "fulfilled" && result.value === 0) {
				this.ctx.storage.sql.exec(
					"DELETE FROM publishers WHERE account = ? AND seq <= ?",
					publishers[i].account,
					since,
				);
			}
		});
	}

	// The change on this object's streams only; answers how many of the account's are left.
	async apply(change: StreamChange): Promise<number> {
		const at = Date.now() / 1000;
		if ("reader" in change) {
			// Still allowed to stream: the streams stay, and read as the reader now is (a user's
			// new role also in the socket's state, where later changes of a role find its holders).
			if (change.user) {
				this.readers.change({ user: change.user }, change.reader);
				const role = change.reader.role;
				if (role !== undefined) {
					for (const ws of this.open(`user:${change.user}`))
						ws.serializeAttachment({ ...(ws.deserializeAttachment() as Stream), role });
				}
			} else if (change.role) this.readers.change({ role: change.role }, change.reader);
			return this.open(`acct:${change.account}`).length;
		}
		for (const ws of this.open(change.user ? `user:${change.user}` : `acct:${change.account}`)) {
			const s = ws.deserializeAttachment() as Stream;
			if (s.account !== change.account || (change.role !== undefined && s.role !== change.role)) continue;
			if (change.provider !== undefined && s.provider !== change.provider) continue;
			if ("code" in change) {
				this.end(ws, change.code);
				continue;
			}
			s.ends.secret = change.validity_ts;
			const end = endOf(s);
			if (end !== null && end <= at) this.end(ws, CLOSE.credentialEnded);
			else ws.serializeAttachment(s);
		}
		// Streams of tokens `user` issued for others rest on its secret too: they end with it (a
		// later validity leaves them; an ended one ends them).
		if (change.user && change.provider === undefined) {
			for (const ws of this.open(`acct:${change.account}`)) {
				const s = ws.deserializeAttachment() as Stream;
				if (s.actor !== change.user) continue;
				if ("code" in change) this.end(ws, change.code);
				else if ("validity_ts" in change && change.validity_ts !== null && change.validity_ts <= at)
					this.end(ws, CLOSE.credentialEnded);
			}
		}
		// A later validity may leave the alarm too early, which only sets it again; an earlier
		// one must move it.
		if (!("code" in change)) await this.alarm();
		return this.open(`acct:${change.account}`).length;
	}

	// The publisher revoked topics it had granted `grantee`: its streams reading any other end.
	ungranted(grantee: string, topics: string[]) {
		for (const ws of this.open(`acct:${grantee}`)) {
			const s = ws.deserializeAttachment() as Stream;
			if (s.topics.some((t) => !topics.includes(t))) this.end(ws, CLOSE.permissionEnded);
		}
	}

	// `publisher`'s object holds a stream of this account's users.
	notePublisher(publisher: string) {
		const seq = this.publisherSeq() + 1;
		this.ctx.storage.sql.exec(
			"INSERT INTO publishers (account, seq) VALUES (?, ?) ON CONFLICT (account) DO UPDATE SET seq = excluded.seq",
			publisher,
			seq,
		);
	}

	private publisherSeq(): number {
		return this.ctx.storage.sql.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM publishers").one().seq ?? 0;
	}

	// The server's last write, then the close frame.
	private end(ws: WebSocket, code: CloseCode) {
		this.forget(ws);
		const s = ws.deserializeAttachment() as Stream;
		try {
			ws.send(endFrame(code, s.sse));
			ws.close(code, REASONS[code]);
		} catch {
			// The client left first.
		}
	}

	private forget(ws: WebSocket) {
		const s = ws.deserializeAttachment() as Stream | null;
		if (s?.reader) this.readers.remove(s.reader);
	}

	private async armFor(s: Stream) {
		const end = endOf(s);
		if (end === null) return;
		const at = Math.ceil(end * 1000);
		const current = await this.ctx.storage.getAlarm();
		if (current === null || current > at) await this.ctx.storage.setAlarm(at);
	}

	private open(tag?: string): WebSocket[] {
		return this.ctx.getWebSockets(tag).filter((ws) => ws.readyState === WebSocket.OPEN);
	}
}

// The UTF-8 size of what is sent of `m`: the stored size when it is sent whole.
function utf8(data: string, m: Message): number {
	return data === m.data ? m.bytes : encoder.encode(data).byteLength;
}

// Whether one more message of `bytes` fits the stream's window (one always does when nothing
// is unacknowledged, however large).
function fits(s: Stream, bytes: number) {
	return s.unacked < WINDOW_MESSAGES && (s.unacked === 0 || s.unackedBytes + bytes <= WINDOW_BYTES);
}

function oldest(sockets: WebSocket[]): WebSocket {
	return sockets.reduce((a, b) =>
		(a.deserializeAttachment() as Stream).opened <= (b.deserializeAttachment() as Stream).opened ? a : b,
	);
}
