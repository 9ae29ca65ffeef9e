// Waiting on what a test cannot await: a probe asked until its answer will do, and the clock
// passing a time the service answered.

// Asks `probe` until `done` accepts its answer, and answers it; fails past `timeoutMs`. Only for
// what a test cannot await: a message through the real queue reaching the receiver, an attempt
// its delivery object finishes on its own, the clock passing a given time.
export async function until<T>(
	probe: () => Promise<T> | T,
	done: (value: T) => boolean,
	what: string,
	timeoutMs = 15_000,
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (done(value)) return value;
		if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
}

// Until the clock reads later than `seconds` (a timestamp the service answered).
export async function clockPast(seconds: number) {
	if (!Number.isFinite(seconds)) throw new Error(`not a time: ${seconds}`);
	await until(
		() => Date.now() / 1000,
		(at) => at > seconds,
		`the clock to pass ${seconds}`,
		5_000,
	);
}
