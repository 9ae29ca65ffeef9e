import { D1Meter } from "./db/meter";
import { buildRouter } from "./http/router";
import { ApiError, ERRORS } from "./base/errors";
import { requestLine, writeRequestLine } from "./http/request-log";
import { errorResponse } from "./http/errors";
import { allowOrigins, preflight } from "./http/cors";
import { routes } from "./routes";
import { loadOnce } from "./base/load-once";
import type { WebhookJob } from "./notifications/jobs";
import { authenticated, type RequestState } from "./http/pipeline";
import { countRequest } from "./account/usage-client";
import { checkedShards, Sessions } from "./db/shards";

export { AccountDO, BatchDO, DeliveryDO, MoveDO, StreamDO, TimeseriesDO } from "./objects";

const router = buildRouter(routes);
// The queue consumer (deliveries, signing, the data layer) loads with the first batch: an
// isolate that serves requests never evaluates it.
const loadConsumer = loadOnce(() => import("./notifications/queue-consumer"));

// What the request left for what comes after its answer: its state (usage, the log line),
// the subcode of its refusal and the failure behind a 500.
type Seen = { state?: RequestState; subcode?: number; failure?: unknown };

async function respond(
	request: Request,
	env: Env,
	ctx: ExecutionContext,
	requestId: string,
	meter: D1Meter,
	seen: Seen,
) {
	try {
		// A Worker on a bad SHARDS map reads and writes nothing (500241).
		checkedShards(env);
		// One D1 session per request and database, begun at the primary: the credential check
		// sees every revocation, and the request's later reads may come from a replica at least
		// as new (see "Global callers" in docs/design.md).
		const shards = new Sessions(env, meter);
		seen.state = { requestId, meter, shards, stages: [{ name: "receive", at: Date.now() }] };
		return await router.fetch(request, env, ctx, seen.state);
	} catch (error) {
		if (error instanceof ApiError) {
			seen.subcode = error.subcode;
			return errorResponse(error, requestId);
		}
		// Last resort: the caller gets a generic answer; the request's log line gets the cause.
		seen.failure = error;
		seen.subcode = ERRORS.internal.subcode;
		return errorResponse(new ApiError("internal"), requestId);
	}
}

// A refusal answered without passing the catch above (kept for an Idempotency-Key, or
// replayed): its subcode is in its body.
async function subcodeOf(response: Response): Promise<number | undefined> {
	if (response.status < 400 || !response.headers.get("content-type")?.startsWith("application/json")) return undefined;
	const body = (await response
		.clone()
		.json()
		.catch(() => undefined)) as { subcode?: unknown } | undefined;
	return typeof body?.subcode === "number" ? body.subcode : undefined;
}

// One `DB_k=<bookmark>` per database the request read or wrote: the caller's home first, then
// binding order (docs/design.md, "Global callers: D1 read replicas").
function bookmarkHeader(meter: D1Meter, shards: Sessions): string | undefined {
	const bookmarks = meter.bookmarks();
	const order = shards.all();
	const bindings = Object.keys(bookmarks).sort((a, b) =>
		a === shards.home ? -1 : b === shards.home ? 1 : order.indexOf(a) - order.indexOf(b),
	);
	return bindings.length ? bindings.map((binding) => `${binding}=${bookmarks[binding]}`).join(", ") : undefined;
}

export default {
	async fetch(request, env, ctx) {
		const startedAt = Date.now();
		const requestId = crypto.randomUUID();
		const meter = new D1Meter();
		const seen: Seen = {};
		const response =
			request.method === "OPTIONS" ? preflight() : await respond(request, env, ctx, requestId, meter, seen);
		allowOrigins(response.headers);
		response.headers.set("x-request-id", requestId);
		response.headers.set("server-timing", meter.serverTiming());
		// Only for a caller whose credential authenticated: to anyone else the shared database's
		// position would tell how much other accounts write (docs/design.md, "Global callers: D1 read replicas").
		const bookmark = seen.state && bookmarkHeader(meter, seen.state.shards);
		if (bookmark && authenticated(seen.state)) response.headers.set("x-d1-bookmark", bookmark);
		// A request of a user counts in its account's usage with what Server-Timing reports,
		// after the answer is built, off its path (buffered, see account/usage-client.ts); a
		// replayed answer counts nothing.
		const counted = seen.state?.counted;
		if (counted && !seen.state?.replayed)
			countRequest({ env, waitUntil: (promise) => ctx.waitUntil(promise) }, counted, response.status, meter);
		const subcode = seen.subcode ?? (await subcodeOf(response));
		const line = requestLine(request, requestId, seen.state, meter, startedAt, {
			status: response.status,
			subcode,
			failure: seen.failure,
		});
		writeRequestLine(line);
		// An answer to HEAD has the headers of GET's and no body, its refusals' included.
		return request.method === "HEAD" ? new Response(null, response) : response;
	},

	async queue(batch, env) {
		const { consumeDeadLetters, consumeWebhookJobs, DEAD_LETTER_QUEUE } = await loadConsumer();
		if (batch.queue === DEAD_LETTER_QUEUE) return consumeDeadLetters(batch, env);
		return consumeWebhookJobs(batch, env);
	},
} satisfies ExportedHandler<Env, WebhookJob>;
