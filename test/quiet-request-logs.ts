// Every request the Worker serves writes one log line (src/http/request-log.ts): a run of the
// suite would print tens of thousands. The runtime prints what the isolate logs, so the lines
// are dropped here, in the isolate, before they reach it; test/http/request-log.test.ts spies
// on console.log and reads them. Setup files may run more than once: the filter goes in once.
const QUIET = Symbol.for("quiet-request-logs");
const marked = console as unknown as Record<symbol, boolean>;
if (!marked[QUIET]) {
	marked[QUIET] = true;
	const print = console.log.bind(console);
	console.log = (...args: unknown[]) => {
		if (typeof args[0] === "string" && args[0].startsWith('{"trace":')) return;
		print(...args);
	};
}
