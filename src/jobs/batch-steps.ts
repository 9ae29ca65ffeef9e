import { now } from "../base/time";
import { checkCall, checkLine, linesOf, MAX_LINE_BYTES, type ParsedLine } from "../operations/batch-lines";
import { cutPage, planPage } from "../account/scan";
import { type PageRow, twinPageStatement } from "../db/twins";
import { homeDatabase } from "../db/shards";
import { BATCHABLE, type BatchableName } from "../operations/batchable";
import { creatorOrStop } from "./creator";
import { lineCommitted, runLine } from "./line";
import type { BatchState, ExportState, InputWindow, JobState, StepRuntime } from "./store";
import { writeResultsStep } from "./results";
import { exportStep } from "./export-steps";

// A batch's stages (docs/batches.md, "Statuses"), one step at a time. Each step answers when the
// next is due (seconds), or undefined when the job has ended.

// Input read per validation step: 1 MiB (docs/batches.md, "Bounds and cost"), and a processing step's window, which always
// holds a whole line.
const WINDOW_BYTES = 1024 * 1024;
// A processing step runs at most this many lines, for at most this long.
const LINES_PER_STEP = 100;
const STEP_MS = 1000;
// The first 100 errors are kept; validation stops there.
const MAX_ERRORS = 100;
// A line answering 5xx is run again at most this many times, after 2, 4 and 8 seconds.
const MAX_RETRIES = 3;

export async function batchStep(rt: StepRuntime, job: JobState): Promise<number | undefined> {
	// The kind decides the progress's shape (the object starts each with its own).
	if (job.spec.kind === "export") return exportStep(rt, job as ExportState);
	const state = job as BatchState;
	switch (state.status) {
		case "new":
			// A match batch selects its lines while it validates; a file batch's input was taken
			// over when it was made: its copy is done.
			state.status = state.spec.details.twins === undefined ? "copied" : "validating";
			return now();
		case "copied":
			state.status = "validating";
			state.next = { line: 1, offset: 0 };
			return now();
		case "validating":
			return state.spec.details.twins === undefined ? validateStep(rt, state) : selectStep(rt, state);
		case "processing":
			return processStep(rt, state);
		case "processed":
			state.status = "writing_results";
			return now();
		case "cancel":
			state.status = "cancelling";
			return now();
		case "writing_results":
		case "cancelling":
			return writeResultsStep(rt, state);
		default:
			return undefined;
	}
}

const retention = (env: Env) => Number(env.BATCH_RETENTION_SECONDS);

// A window of the input from `offset`, and whether it reaches the file's end.
async function windowAt(env: Env, input: string, offset: number): Promise<{ bytes: Uint8Array; last: boolean }> {
	const object = await env.DOCS.get(input, { range: { offset, length: WINDOW_BYTES } });
	if (!object) throw new Error(`The input of a batch is missing: ${input}`);
	const bytes = new Uint8Array(await object.arrayBuffer());
	return { bytes, last: offset + bytes.length >= object.size };
}

// The input from `offset` for a processing step: what is left of the window the step before read,
// while it still holds a step's lines (or the file's end), else a new window. A window of short
// lines serves many steps; each step reading its own megabyte would read the input anew for
// every 100 lines.
async function processingWindow(rt: StepRuntime, input: string, offset: number): Promise<InputWindow> {
	const kept = rt.window;
	if (kept && offset >= kept.offset && offset <= kept.offset + kept.bytes.length) {
		const rest = { offset, bytes: kept.bytes.subarray(offset - kept.offset), last: kept.last };
		if (rest.last || linesOf(rest.bytes, false, LINES_PER_STEP).length === LINES_PER_STEP) return rest;
	}
	rt.window = { offset, ...(await windowAt(rt.env, input, offset)) };
	return rt.window;
}

// Reads ≤ 1 MiB of the input and checks its lines; at the end, the batch fails validation or
// goes on to run.
async function validateStep(rt: StepRuntime, state: BatchState): Promise<number | undefined> {
	if (state.cancelAsked) return cancelling(state);
	const name = state.spec.operation as BatchableName;
	const max = Number(rt.env.MAX_BATCH_LINES);
	const { bytes, last } = await windowAt(rt.env, state.spec.input!, state.next.offset);
	const lines = linesOf(bytes, last);
	if (state.skipping || lines.length === 0) {
		// Inside a line longer than a window: on to its end.
		const end = lines[0]?.next;
		if (end === undefined && !last) {
			state.next.offset += bytes.length;
			if (!state.skipping) {
				state.errors.push({ line: state.next.line, path: "", message: `Longer than ${MAX_LINE_BYTES} bytes` });
				state.skipping = true;
			}
			return now();
		}
		if (state.skipping) {
			state.skipping = false;
			state.next = { line: state.next.line + 1, offset: state.next.offset + (end ?? bytes.length) };
			lines.splice(0, 1);
		}
	}
	const base = state.next.offset;
	for (const { bytes: line, next } of lines) {
		const n = state.next.line;
		if (n > max) {
			state.errors.push({ line: n, path: "", message: `More than ${max} lines (MAX_BATCH_LINES)` });
			return endValidation(rt, state);
		}
		const checked = checkLine(name, line, n);
		state.errors.push(...checked.errors.slice(0, MAX_ERRORS - state.errors.length));
		state.next = { line: n + 1, offset: base + next };
		if (state.errors.length >= MAX_ERRORS) return endValidation(rt, state);
	}
	if (!last || state.next.offset < base + bytes.length) return now();
	return endValidation(rt, state);
}

function endValidation(rt: StepRuntime, state: BatchState): number | undefined {
	if (state.cancelAsked) return cancelling(state);
	if (state.errors.length) {
		state.status = "validation_failed";
		state.expires_ts = now() + retention(rt.env);
		return state.expires_ts;
	}
	state.progress.lines = state.next.line - 1;
	state.status = "processing";
	state.next = { line: 1, offset: 0 };
	return now();
}

// Runs up to 100 lines, or 1 s of them, as the creator now is.
async function processStep(rt: StepRuntime, state: BatchState): Promise<number | undefined> {
	const { spec } = state;
	const name = spec.operation as BatchableName;
	const caller = await creatorOrStop(rt.env, state);
	if (caller === undefined) return now();
	const lines = state.progress.lines ?? 0;
	if (state.next.line > lines) {
		state.status = "processed";
		return now();
	}
	const ends = Date.now() + STEP_MS;
	let ran = 0;
	for (const { n, twin, parsed, offset } of await nextLines(rt, state, name)) {
		if (state.cancelAsked) return cancelling(state);
		if (ran >= LINES_PER_STEP || Date.now() >= ends || n > lines) break;
		const call = { name, ...parsed };
		const runtime = { env: rt.env, waitUntil: (promise: Promise<unknown>) => rt.ctx.waitUntil(promise) };
		const mark = { job: spec.uuid, line: n };
		// A line that began before a restart and committed is not run again.
		const done = state.running === n && (await lineCommitted(rt.env, spec.uuid, n));
		state.running = n;
		rt.save();
		const answer = done ? ({ already: true } as const) : await runLine(runtime, caller, call, mark);
		await turn();
		ran++;
		if (!("already" in answer) && answer.status >= 500 && state.retries < MAX_RETRIES) {
			state.retries++;
			state.running = null;
			return now() + 2 ** state.retries;
		}
		// Its write committed in an earlier run whose answer was lost with the object: the write
		// stands, the answer is the operation's success with no body.
		const status = "already" in answer ? (BATCHABLE[name].operation.status ?? 200) : answer.status;
		const body = "already" in answer ? "null" : JSON.stringify(answer.body ?? null);
		const subcode = "already" in answer ? null : (answer.subcode ?? null);
		rt.store.answer({ line: n, twin, status, subcode, body });
		state.progress.done++;
		if (status < 300) state.progress.succeeded++;
		else state.progress.failed++;
		state.retries = 0;
		state.running = null;
		state.next = { line: n + 1, offset };
		rt.save();
	}
	if (state.cancelAsked) return cancelling(state);
	if (state.next.line > lines) state.status = "processed";
	return now();
}

type NextLine = { n: number; twin: string | null; parsed: ParsedLine; offset: number };

// The lines a processing step may run: from the input's window at the next line, or the
// selected twins with the template applied to each.
async function nextLines(rt: StepRuntime, state: BatchState, name: BatchableName): Promise<NextLine[]> {
	const { spec } = state;
	if (spec.details.twins !== undefined) {
		const template = spec.details.template as Record<string, Record<string, unknown> | undefined>;
		return rt.store.selectedFrom(state.next.line, LINES_PER_STEP).map(({ line, twin }) => {
			const value = { ...template, params: { ...template.params, twin } };
			const checked = checkCall(name, value, line, "template.");
			if (!("parsed" in checked)) throw new Error(`The template of batch ${spec.uuid} no longer validates`);
			return { n: line, twin, parsed: checked.parsed, offset: 0 };
		});
	}
	const { bytes, last } = await processingWindow(rt, spec.input!, state.next.offset);
	const base = state.next.offset;
	let n = state.next.line;
	// Only the lines a step may run are checked again: a window can hold thousands.
	return linesOf(bytes, last, LINES_PER_STEP).map(({ bytes: text, next }) => {
		const checked = checkLine(name, text, n);
		if (!("parsed" in checked)) throw new Error(`Line ${n} of batch ${spec.uuid} no longer validates`);
		return { n: n++, twin: null, parsed: checked.parsed, offset: base + next };
	});
}

// Twins the creator sees examined per selection step (a scan page's count at most).
const SELECT_PER_STEP = 1000;

// One step of a match batch's selection: the next twins of the account the creator now sees and
// `match` passes, in uuid order, fixed as lines. Past MAX_BATCH_LINES the batch fails validation.
async function selectStep(rt: StepRuntime, state: BatchState): Promise<number | undefined> {
	if (state.cancelAsked) return cancelling(state);
	const { spec } = state;
	const caller = await creatorOrStop(rt.env, state);
	if (caller === undefined) return now();
	const at = now();
	const request = { count: SELECT_PER_STEP, match: (spec.details.twins as { match: string }).match, details: true };
	const plan = planPage(caller, state.after, request, at);
	const d1 = homeDatabase(rt.env, spec.creator.account);
	const rows = (await twinPageStatement(d1, plan.query).all<PageRow>()).results;
	const page = cutPage(rows, plan, caller, request, at);
	const twins = page.twins.map((text) => (JSON.parse(text) as { uuid: string }).uuid);
	const max = Number(rt.env.MAX_BATCH_LINES);
	const first = state.next.line;
	if (first - 1 + twins.length > max) {
		state.errors.push({ line: max + 1, path: "twins", message: `More than ${max} twins match (MAX_BATCH_LINES)` });
		return endValidation(rt, state);
	}
	rt.store.select(first, twins);
	state.next = { line: first + twins.length, offset: 0 };
	if (page.last) state.after = page.last;
	if (!page.done) return now();
	return endValidation(rt, state);
}

// A step that stops here writes the results of the lines run, then ends `cancelled`.
function cancelling(state: JobState): number {
	state.status = "cancelling";
	return now();
}

// Between two lines the step gives the runtime a turn to take new requests. Where D1 and the
// account's object answer within the same process (wrangler dev, npm start), a step's calls
// complete without the event loop ever waiting on the network, so requests that arrive meanwhile
// were taken only once the step ended, up to a second later; a timer's wait lets them in.
const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
