import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bootstrap, call, expectError } from "../helpers";
import { addEntries, ledger, newTwin } from "./support";

const pause = () => new Promise((resolve) => setTimeout(resolve, 3));

async function setValue(secret: string, twin: string, name: string, value: unknown) {
	const res = await call("PATCH", ledger(twin, "personal", "/value"), { secret, body: { entries: { [name]: { value } } } });
	expect(res.status).toBe(200);
	return res.body.entries[name];
}

// The records of an answer, newest first. The service sends them newest first, but a JSON
// object key that is a whole number (a timestamp on an exact second) is put first, in
// ascending order, by any JavaScript parser: order them by timestamp to compare.
function records(answer: Record<string, unknown>) {
	return Object.entries(answer).sort(([a], [b]) => Number(b) - Number(a));
}

async function stored(twin: string, name: string) {
	const { results } = await env.DB.prepare("SELECT ts FROM ledger_history WHERE twin = ? AND name = ? ORDER BY ts").bind(twin, name).all<{ ts: number }>();
	return results.map((r) => r.ts);
}

// Records written straight into D1, at the given timestamps, as history left by earlier writes.
async function seedHistory(twin: string, account: string, name: string, stamps: number[]) {
	const insert = env.DB.prepare("INSERT INTO ledger_history (twin, account, name, ts, value) VALUES (?, ?, ?, ?, ?)");
	for (let i = 0; i < stamps.length; i += 200) {
		await env.DB.batch(stamps.slice(i, i + 200).map((ts) => insert.bind(twin, account, name, ts, JSON.stringify({ seeded: ts }))));
	}
}

describe("ledger entry history", () => {
	it("records creation and every value change, newest first, within ge, le and limit", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const first = (await addEntries(admin.secret, twin, { level: { value: 0, history: "INF" }, plain: { value: 0 } })).level;
		const stamps = [first.value_changed_ts];
		for (const value of [1, 2, 3]) {
			await pause();
			stamps.push((await setValue(admin.secret, twin, "level", value)).value_changed_ts);
		}
		const all = await call("GET", ledger(twin, "personal", "/history?entries=level,plain"), { secret: admin.secret });
		expect(all.status).toBe(200);
		expect(records(all.body.entries.level)).toEqual([...stamps].reverse().map((ts, i) => [String(ts), 3 - i]));
		expect(all.body.entries.plain).toBe("Entry not accessible.");

		const window = await call("GET", ledger(twin, "personal", `/history?entries=level&ge=${stamps[1]}&le=${stamps[3]}&limit=2`), { secret: admin.secret });
		expect(records(window.body.entries.level).map(([, v]) => v)).toEqual([3, 2]);
		const everything = await call("GET", ledger(twin, "personal", "/history"), { secret: admin.secret });
		expect(Object.keys(everything.body.entries)).toEqual(["level"]);
		expectError(await call("GET", ledger(twin, "personal", "/history?ge=5&le=4"), { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", ledger(twin, "personal", "/history?limit=101"), { secret: admin.secret }), 400, 400101);
	});

	it("starts with the current value when turned on, and drops the records when turned off or deleted", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { x: { value: "a" }, y: { value: 1, history: "2W" } });
		const on = await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { x: { history: "1Y" } } } });
		expect(Object.values((await call("GET", ledger(twin, "personal", "/history?entries=x"), { secret: admin.secret })).body.entries.x)).toEqual(["a"]);
		expect(on.body.entries.x.history).toBe("1Y");
		await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { x: { history: null } } } });
		expect(await stored(twin, "x")).toEqual([]);
		await call("DELETE", ledger(twin, "personal", "?entries=y"), { secret: admin.secret });
		expect(await stored(twin, "y")).toEqual([]);
	});

	it("prunes on write what is older than the period", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = (await addEntries(admin.secret, twin, { daily: { value: 0, history: "1D" } })).daily.value_changed_ts;
		const old = created - 86_400 - 10;
		const recent = created - 3600;
		await seedHistory(twin, admin.account, "daily", [old, old + 1, recent]);
		const changed = (await setValue(admin.secret, twin, "daily", 1)).value_changed_ts;
		expect(await stored(twin, "daily")).toEqual([recent, created, changed].sort((a, b) => a - b));
	});

	it("keeps at most the 1000 newest records of an entry", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = (await addEntries(admin.secret, twin, { busy: { value: 0, history: "INF" } })).busy.value_changed_ts;
		const seeded = Array.from({ length: 1000 }, (_, i) => created - 1000 + i + 0.5);
		await seedHistory(twin, admin.account, "busy", seeded);
		expect(await stored(twin, "busy")).toHaveLength(1001);
		const changed = (await setValue(admin.secret, twin, "busy", 1)).value_changed_ts;
		const kept = await stored(twin, "busy");
		expect(kept).toHaveLength(1000);
		expect(kept.at(-1)).toBe(changed);
		expect(kept[0]).toBe(seeded[2]);
		const page = await call("GET", ledger(twin, "personal", "/history?entries=busy&limit=3"), { secret: admin.secret });
		expect(records(page.body.entries.busy).map(([, v]) => v)).toEqual([1, 0, { seeded: seeded[999] }]);
	});
});
