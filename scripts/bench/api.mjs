// What the bench parts share to call the API of the dev server they measure: a JSON call that
// throws on a refusal, the same call timed with its D1 figures from Server-Timing.

// One figure of Server-Timing's desc (`queries`, `rows_read`, `rows_written`).
export function figure(res, name) {
	return Number(new RegExp(`${name}=(\\d+)`).exec(res.headers.get("server-timing") ?? "")?.[1]);
}

async function send(url, secret, method, path, body) {
	const res = await fetch(url + path, {
		method,
		headers: { authorization: secret, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const answer = await res.json();
	if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
	return { res, answer };
}

export async function call(url, secret, method, path, body) {
	return (await send(url, secret, method, path, body)).answer;
}

// The call's wall time (answer read whole) and what it cost in D1.
export async function timed(url, secret, method, path, body) {
	const start = performance.now();
	const { res, answer } = await send(url, secret, method, path, body);
	const ms = performance.now() - start;
	return {
		ms,
		answer,
		queries: figure(res, "queries"),
		rowsRead: figure(res, "rows_read"),
		rowsWritten: figure(res, "rows_written"),
	};
}
