export const DELIVERY_TIMEOUT_MS = 10_000;

export type DeliveryOutcome = {
	kind: "delivered" | "permanent" | "retry";
	detail: string;
	status: number | null;
	durationMs: number;
	// Seconds the receiver asked us to wait (Retry-After), when it said so.
	retryAfter: number | null;
	// What the account log says of it, if it was the last: no URL, no error text.
	reason: string;
};

// 2xx is delivered. Redirects are not followed and, like 4xx other than 408 and 429, will not
// get better by retrying. 5xx, 408, 429, timeouts and network errors are worth another try.
export function classify(status: number): DeliveryOutcome["kind"] {
	if (status >= 200 && status < 300) return "delivered";
	if (status >= 500 || status === 408 || status === 429) return "retry";
	return "permanent";
}

// Retry-After is either delay-seconds or an HTTP date (RFC 9110 10.2.3).
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
	if (!value) return null;
	const text = value.trim();
	if (/^\d+$/.test(text)) return Number(text);
	const date = Date.parse(text);
	if (Number.isNaN(date)) return null;
	return Math.max(0, Math.ceil((date - nowMs) / 1000));
}

export async function deliver(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> {
	const started = Date.now();
	try {
		const response = await fetch(url, {
			method: "POST",
			body,
			headers: { "content-type": "application/json", "user-agent": "twin-registry-webhooks", ...headers },
			redirect: "manual",
			signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
		});
		await response.body?.cancel();
		const kind = classify(response.status);
		return {
			kind,
			detail: `HTTP ${response.status}`,
			status: response.status,
			durationMs: Date.now() - started,
			retryAfter: kind === "retry" ? parseRetryAfter(response.headers.get("retry-after"), Date.now()) : null,
			reason: `HTTP ${response.status}`,
		};
	} catch (error) {
		const timedOut = (error as Error)?.name === "TimeoutError";
		return {
			kind: "retry",
			detail: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `network error: ${String(error)}`,
			status: null,
			durationMs: Date.now() - started,
			retryAfter: null,
			reason: timedOut ? "a timeout" : "a network error",
		};
	}
}
