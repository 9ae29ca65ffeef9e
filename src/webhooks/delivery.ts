export const DELIVERY_TIMEOUT_MS = 10_000;

export type DeliveryOutcome =
	| { kind: "delivered"; detail: string }
	| { kind: "permanent"; detail: string }
	| { kind: "retry"; detail: string };

// 2xx is delivered. Redirects are not followed and, like 4xx other than 408 and 429, will not
// get better by retrying. 5xx, 408, 429, timeouts and network errors are worth another try.
export function classify(status: number): DeliveryOutcome["kind"] {
	if (status >= 200 && status < 300) return "delivered";
	if (status >= 500 || status === 408 || status === 429) return "retry";
	return "permanent";
}

export async function deliver(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> {
	try {
		const response = await fetch(url, {
			method: "POST",
			body,
			headers: { "content-type": "application/json", "user-agent": "twin-registry-webhooks", ...headers },
			redirect: "manual",
			signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
		});
		await response.body?.cancel();
		return { kind: classify(response.status), detail: `HTTP ${response.status}` };
	} catch (error) {
		const timedOut = (error as Error)?.name === "TimeoutError";
		return { kind: "retry", detail: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `network error: ${String(error)}` };
	}
}

// 5 s, 10 s, 20 s, ... capped at 10 minutes.
export function backoffSeconds(attempt: number): number {
	return Math.min(5 * 2 ** Math.max(0, attempt - 1), 600);
}
