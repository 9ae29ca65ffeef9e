import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import type { Caller } from "../base/caller";
import { signStreamToken, streamBinding } from "../base/stream-token";
import { homeDatabase, homeOf } from "../db/shards";
import { database } from "../db/client";
import { checkStatement } from "../policy/credential";
import { recheck } from "./standing";
import { madeUntil } from "../policy/token";
import { connectStream, type StreamOpen } from "../notifications/streams/client";
import { CLOSE, EVENT_ID } from "../notifications/streams/frames";
import { eventStream } from "../notifications/streams/sse";
import { type Context, defineOperation } from "./operation";
import { commaList, timestampOut, topic, uuid, withMeta } from "./schemas";
import { topicsGranted } from "./webhooks";

// Live streams: the notification messages of one account's topics, over Server-Sent Events
// (any GET) or a WebSocket (an Upgrade request), resumable by event id. The Worker checks the
// caller; the publishing account's stream object (src/notifications/streams/) holds the log and
// the sockets.

// At most 8 topics: a socket carries at most 10 tags, one per topic, its user and its account.
const MAX_STREAM_TOPICS = 8;

const topics = commaList(topic, MAX_STREAM_TOPICS, "topics");

// The pipe states the transform's result for the API document.
const eventId = z.pipe(
	z.pipe(z.string().check(z.regex(EVENT_ID, "Must be an event id: 1 to 16 decimal digits")), z.transform(Number)),
	z.number().check(z.int()),
);

export const streamNotifications = defineOperation({
	name: "stream_notifications",
	summary:
		"A live stream of an account's notification messages on some topics: Server-Sent Events, or a WebSocket on an Upgrade request; resumable by event id",
	description:
		"A live stream of the notification messages of an account (the caller's, or one that granted it the topics) on 1 to 8 topics: Server-Sent Events, or a WebSocket on an Upgrade request. Resumes after since or Last-Event-ID. A role with a twin or entry rule gets each message only as it could read it: of twins it sees, with the entries it sees.",
	refuses: ["topic_not_granted", "stream_limit", "conflict"],
	auth: "secret",
	streamToken: true,
	answers: "events",
	headers: ["last-event-id", "upgrade"],
	query: z.strictObject({
		topics: withMeta(topics, { description: "1 to 8 comma-separated topics" }),
		account: withMeta(z.optional(uuid), {
			description: "The publishing account (default: the caller's); another account's topics need its grant",
		}),
		since: withMeta(z.optional(eventId), {
			description: "Resume after this event id (Last-Event-ID wins when both are given)",
		}),
		// A token holds its maker's dictionary: up to about 3 KiB of JSON, in base64url.
		access_token: withMeta(z.optional(z.string().check(z.maxLength(4608))), {
			description: "A stream token (create_stream_token) instead of the Authorization header",
		}),
	}),
	response: z.string(),
	async run({ query, headers }, ctx) {
		const publisher = query.account ?? ctx.caller.account;
		await requireAccess(ctx, ctx.caller, publisher, query.topics);
		const sse = headers.upgrade?.toLowerCase() !== "websocket";
		const lastEventId = headers["last-event-id"];
		const since =
			lastEventId !== undefined
				? EVENT_ID.test(lastEventId)
					? Number(lastEventId)
					: "unknown"
				: (query.since ?? null);
		let caller: Caller = ctx.caller;
		// A change that committed between the check above and the stream's registration found no
		// stream to end: the credential is read again, at the primary, once the stream is
		// registered. Any change after that reaches it. A caller whose role changed meanwhile
		// (and still may stream) registers again, once, as it now is.
		for (let attempt = 0; ; attempt++) {
			const open = { ...openOf(caller, publisher, query.topics, since, sse), limit: Number(ctx.env.MAX_STREAMS) };
			const answer = await connectStream(ctx.env, open);
			if (answer.status === 409) {
				const { limit } = (await answer.json()) as { limit: number };
				throw new ApiError("stream_limit", {
					description: `The account already has ${limit} streams open on this publishing account, its limit (MAX_STREAMS)`,
				});
			}
			const socket = answer.webSocket;
			if (answer.status !== 101 || !socket) throw new Error(`The stream object answered ${answer.status}`);
			const fresh = await checkedAgain(ctx, caller, publisher, query.topics).catch((error: unknown) => {
				refuse(
					socket,
					error instanceof ApiError && error.status === 401 ? CLOSE.credentialEnded : CLOSE.permissionEnded,
				);
				throw error;
			});
			if (standing(fresh) === standing(caller)) {
				return sse
					? eventStream(socket, Number(ctx.env.STREAM_HEARTBEAT_SECONDS))
					: new Response(null, { status: 101, webSocket: socket });
			}
			refuse(socket, CLOSE.permissionEnded);
			if (attempt > 0)
				throw new ApiError("conflict", {
					description: "The caller's role or credential changed while the stream opened; open it again",
				});
			caller = fresh;
		}
	},
});

// What stream_notifications refuses for the credential alone, after the credential itself: its
// statement. create_stream_token refuses the same, so it never makes a token the stream would
// refuse whatever the query. (A role with a twin or entry rule streams, filtered.)
function requireStreaming(caller: Caller) {
	checkStatement(caller, "stream_notifications");
}

// Step 4 of the order (after the credential, the statement and the query): another account's
// topics need its grant, every one of them.
// The grant is in the publisher's database.
async function requireAccess(
	ctx: Context,
	caller: Caller,
	publisher: string,
	topics: string[],
	db = database(ctx.shards.for(publisher)),
) {
	if (publisher !== caller.account && !(await topicsGranted({ ...ctx, caller }, publisher, topics, db)))
		throw new ApiError("topic_not_granted");
}

// The credential's rows, the statement and the access again, read at the primary.
async function checkedAgain(ctx: Context, caller: Caller, publisher: string, topics: string[]): Promise<Caller> {
	const at = (account: string) =>
		ctx.meter.wrap(homeDatabase(ctx.env, account).withSession("first-primary"), homeOf(ctx.env, account));
	const fresh = await recheck(at(caller.account), caller, now());
	checkStatement(fresh, "stream_notifications");
	await requireAccess(ctx, fresh, publisher, topics, database(at(publisher)));
	return fresh;
}

function openOf(
	caller: Caller,
	publisher: string,
	topics: string[],
	since: StreamOpen["since"],
	sse: boolean,
): Omit<StreamOpen, "limit"> {
	const { credential } = caller;
	const own = credential?.stream?.exp ?? credential?.token?.exp ?? null;
	const { account, user, role, statement, rules, description } = caller;
	const reader = { account, user, role, statement, rules, description, dict: caller.dict ?? null };
	const binding = credential?.binding;
	const restsOn =
		binding?.kind === "federated"
			? { provider: binding.provider }
			: binding?.kind === "issued"
				? { actor: binding.actor }
				: {};
	return {
		publisher,
		account,
		user,
		role,
		topics,
		since,
		sse,
		ends: { own, secret: credential?.validity_ts ?? null },
		reader,
		...restsOn,
	};
}

// What a registered stream rests on, the same before and after its registration or it
// registers again: its role (what a role change ends), what the role allows, and when the
// secret stops working.
const standing = (caller: Caller) =>
	JSON.stringify([
		caller.role,
		caller.statement,
		caller.rules,
		caller.description,
		caller.credential?.validity_ts ?? null,
	]);

// A registered socket the client never gets: closed, so that the object forgets it.
function refuse(socket: WebSocket, code: number) {
	socket.accept();
	socket.close(code, "refused");
}

const DEFAULT_STREAM_TOKEN_SECONDS = 3600;

export const createStreamToken = defineOperation({
	name: "create_stream_token",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary:
		"A stream token: the credential of stream_notifications in its access_token parameter, for a browser's EventSource; valid there only",
	description:
		"A stream token, valid for expires seconds and never past the caller's credential: the credential of stream_notifications in its access_token parameter, for a browser's EventSource. It works nowhere else. Refused as stream_notifications would refuse the caller whatever the query: the statement must allow both operations (403101). It carries the dictionary (X-TrustedTwin) of the request that makes it.",
	refuses: ["webhooks_unconfigured"],
	example: { expires: 3600 },
	auth: "secret",
	status: 201,
	body: z.strictObject({
		expires: withMeta(
			z._default(z.optional(z.number().check(z.int(), z.gte(60), z.lte(86_400))), DEFAULT_STREAM_TOKEN_SECONDS),
			{ description: "Seconds, 60 to 86400 (default 3600)" },
		),
	}),
	response: z.object({ token: z.string(), validity_ts: timestampOut }),
	async run({ body }, ctx) {
		requireStreaming(ctx.caller);
		const credential = ctx.caller.credential!;
		// Nothing made with a credential outlives it: the secret's validity, and a User Token's expiry.
		const ends = [now() + body.expires, credential.validity_ts, madeUntil(credential)].filter(
			(t): t is number => typeof t === "number",
		);
		const validityMs = Math.floor(Math.min(...ends) * 1000);
		const claim = {
			account: ctx.caller.account,
			user: ctx.caller.user,
			binding: streamBinding(credential.binding),
			validityMs,
			dict: ctx.caller.dict ?? null,
		};
		const token = await signStreamToken(ctx.env.WEBHOOK_KEY, claim);
		if (!token)
			throw new ApiError("webhooks_unconfigured", {
				description: "Stream tokens are not configured on this server (WEBHOOK_KEY)",
			});
		return { token, validity_ts: validityMs / 1000 };
	},
});
