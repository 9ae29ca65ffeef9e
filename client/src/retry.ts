// Retries with an Idempotency-Key. A POST or PATCH gets one key per logical request, the same on
// each of its attempts, so the service runs it at most once and replays its answer to a retry
// (docs/operations.md, "Idempotent requests"). Retried: a request that failed on the network, and
// an answer that says nothing ran or it is still running: 429, any 5xx, 409107 (the same key still
// running) and 409176 (an upload to the same URL still streaming). Each waits the answer's
// Retry-After when it has one, else an exponential backoff with jitter.
import { ERRORS } from "./codes.js";

export type Fetch = (request: Request) => Promise<Response>;

export type RetryOptions = {
	// Retries after the first attempt (3 by default); 0 sends once, with the key all the same.
	retries?: number;
	// The first backoff (200 ms); each next one doubles, up to maxDelayMs (5000 ms).
	baseDelayMs?: number;
	maxDelayMs?: number;
	// A Retry-After longer than this (60 s) is not waited for: the answer is returned as it is.
	maxRetryAfterMs?: number;
	// The key of a logical request; crypto.randomUUID() by default.
	key?: () => string;
	// How to wait; a test passes its own.
	sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

const RETRIED_SUBCODES: ReadonlySet<number> = new Set([
	ERRORS.idempotency_in_flight.subcode,
	ERRORS.upload_in_progress.subcode,
]);

// A fetch that retries as above; `send` is the fetch underneath.
export function retryingFetch(send: Fetch, options: RetryOptions = {}): Fetch {
	const { retries = 3, baseDelayMs = 200, maxDelayMs = 5000, maxRetryAfterMs = 60_000 } = options;
	const key = options.key ?? (() => crypto.randomUUID());
	const sleep = options.sleep ?? abortableSleep;
	return async (request) => {
		const method = request.method.toUpperCase();
		if ((method === "POST" || method === "PATCH") && !request.headers.has("idempotency-key"))
			request.headers.set("idempotency-key", key());
		for (let attempt = 0; ; attempt++) {
			const last = attempt >= retries;
			const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt) * (0.5 + Math.random() / 2);
			let response: Response;
			try {
				// The original goes out last, so that a body can be sent again until then.
				response = await send(last ? request : request.clone());
			} catch (error) {
				if (last || request.signal.aborted || isAbort(error)) throw error;
				await sleep(backoff, request.signal);
				continue;
			}
			if (last || !(await retryable(response))) return response;
			const wait = retryAfterMs(response.headers.get("retry-after")) ?? backoff;
			if (wait > maxRetryAfterMs) return response;
			await response.body?.cancel();
			await sleep(wait, request.signal);
		}
	};
}

async function retryable(response: Response): Promise<boolean> {
	if (response.status === 429 || response.status >= 500) return true;
	if (response.status !== 409) return false;
	const body = (await response
		.clone()
		.json()
		.catch(() => undefined)) as { subcode?: unknown } | undefined;
	return typeof body?.subcode === "number" && RETRIED_SUBCODES.has(body.subcode);
}

// Retry-After in milliseconds: delta-seconds or an HTTP date.
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
	if (header === null || header.trim() === "") return undefined;
	if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
	const date = Date.parse(header);
	return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function isAbort(error: unknown): boolean {
	return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) return reject(signal.reason);
		const onAbort = () => {
			clearTimeout(timer);
			reject(signal?.reason);
		};
		const timer = setTimeout(() => {
			signal?.removeEventListener("abort", onAbort);
			resolve();
		}, ms);
		signal?.addEventListener("abort", onAbort, { once: true });
	});
}
