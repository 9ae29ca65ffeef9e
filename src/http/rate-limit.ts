import type { IPv6 } from "ipaddr.js";
import { ApiError } from "../base/errors";
import { loadOnce } from "../base/load-once";

// Rate limits per client address, with the Workers Rate Limiting binding (wrangler.toml
// [[ratelimits]]): SECRET_ATTEMPTS counts every request to a route whose only credential is a
// value in the URL (a PIN, a webhook token), AUTH_FAILURES every failed authentication.
// Counts are per Cloudflare location and approximate, which is enough to turn a guessing
// loop of thousands of requests into a few dozen a minute.

// ipaddr.js comes with the first request that needs a client's key (a failed authentication,
// a route whose credential is in its URL): a new isolate serving authenticated requests
// never compiles it.
const loadIpaddr = loadOnce(() => import("ipaddr.js").then((module) => module.default));

// CF-Connecting-IP is set by Cloudflare on every request that reaches the Worker. An IPv6
// client usually holds a whole /64, so that is what one key stands for.
export async function clientKey(request: Request): Promise<string> {
	const ipaddr = await loadIpaddr();
	const address = request.headers.get("cf-connecting-ip")?.trim() ?? "";
	if (!ipaddr.isValid(address)) return "unknown";
	const parsed = ipaddr.parse(address);
	if (parsed.kind() === "ipv4") return parsed.toString();
	return `${(parsed as IPv6).parts
		.slice(0, 4)
		.map((part) => part.toString(16))
		.join(":")}::/64`;
}

export async function spendAttempt(limiter: RateLimit, request: Request): Promise<void> {
	const { success } = await limiter.limit({ key: await clientKey(request) });
	if (!success) throw new ApiError("rate_limited", { headers: { "retry-after": "60" } });
}

// A capability route (an upload or download URL) spends an attempt only when its lookup fails,
// and the token exchange only when it refuses (401). An address refused for that is then refused
// before any lookup, by this isolate, for the rest of the minute: else a guess that happened to
// be right would still be answered. Each kind of route remembers its own refusals.
export type Refusing = "capability" | "exchange";
const refusedUntil = new Map<string, number>();
const MAX_REMEMBERED = 10_000;

export async function refuseIfLimited(request: Request, kind: Refusing): Promise<void> {
	const until = refusedUntil.get(`${kind} ${await clientKey(request)}`);
	if (until !== undefined && until > Date.now())
		throw new ApiError("rate_limited", { headers: { "retry-after": "60" } });
}

export async function spendFailedLookup(limiter: RateLimit, request: Request, kind: Refusing): Promise<void> {
	try {
		await spendAttempt(limiter, request);
	} catch (error) {
		if (refusedUntil.size >= MAX_REMEMBERED) refusedUntil.clear();
		refusedUntil.set(`${kind} ${await clientKey(request)}`, Date.now() + 60_000);
		throw error;
	}
}
