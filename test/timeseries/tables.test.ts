import { describe, expect, it } from "vitest";
import { bootstrap, userWithRules } from "../support/accounts";
import { call, expectError, fingerprint } from "../support/requests";
import { createTables, definition, TIMESERIES, table, timeseriesPath } from "./helpers";

// Definitions of Timeseries tables (docs/timeseries.md, "Definitions"): the record, the texts of
// a create, what an update may change, delete and truncate; and who may use them.

const RECORD_KEYS = [
	"stats",
	"dimensions",
	"measurements",
	"defaults",
	"retention",
	"chunk",
	"rollups",
	"status",
	"created_ts",
	"updated_ts",
];

describe("Timeseries table definitions", () => {
	it("creates tables with the defaults filled in, in request order, and lists them by name", async () => {
		const admin = await bootstrap();
		const created = await createTables(admin.secret, {
			zeta: definition({
				rollups: [
					{ step: "1h", retention: "INF" },
					{ step: "1m", retention: "1W" },
				],
			}),
			alpha: definition({ database: "default" }),
		});
		expect(Object.keys(created)).toEqual(["zeta", "alpha"]);
		expect(Object.keys(created.alpha)).toEqual(RECORD_KEYS);
		expect(created.alpha).toMatchObject({
			stats: { rows: 0, table_size: 0 },
			defaults: null,
			retention: "INF",
			chunk: "1W",
			rollups: [],
			status: "ready",
		});
		// Answered in ascending step.
		expect(created.zeta.rollups.map((r: { step: string }) => r.step)).toEqual(["1m", "1h"]);
		const list = await call("GET", TIMESERIES, { secret: admin.secret });
		expect(Object.keys(list.body.timeseries)).toEqual(["alpha", "zeta"]);
		expect(await table(admin.secret, "alpha")).toEqual(created.alpha);
	});

	it("answers an error in place of a table that exists, or past the limit", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { a: definition() });
		const again = await createTables(admin.secret, { a: definition(), b: definition() });
		expect(again.a).toEqual({ error: "Table already exists." });
		expect(again.b.status).toBe("ready");
		const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`t${i}`, definition()]));
		const past = await createTables(admin.secret, many);
		expect(Object.values(past).filter((r: any) => r.error === "Table limit reached.")).toHaveLength(1);
	});

	it("refuses an invalid definition whole, naming the field", async () => {
		const admin = await bootstrap();
		const res = await call("POST", TIMESERIES, {
			secret: admin.secret,
			body: {
				timeseries: {
					good: definition(),
					bad: definition({ measurements: { names: ["twin"], types: ["float"] }, chunk: "2Y" }),
				},
			},
		});
		expectError(res, 400, 400101);
		const paths = res.body.details.map((d: { path: string }) => d.path);
		expect(paths).toContain("timeseries.bad.measurements.names.0");
		expect(paths).toContain("timeseries.bad.chunk");
		expect((await call("GET", TIMESERIES, { secret: admin.secret })).body.timeseries).toEqual({});
	});

	it("updates what may change, and refuses the chunk and a kept measurement's type", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { temps: definition() });
		const path = timeseriesPath("temps");
		expectError(await call("PATCH", path, { secret: admin.secret, body: { chunk: "1D" } }), 400, 400101);
		const retyped = await call("PATCH", path, {
			secret: admin.secret,
			body: { measurements: { names: ["celsius"], types: ["integer"] } },
		});
		expectError(retyped, 400, 400101);
		const same = await call("PATCH", path, { secret: admin.secret, body: { chunk: "1W" } });
		expect(same.status).toBe(200);
		expect(same.body.updated_ts).toBe(same.body.created_ts);
		const changed = await call("PATCH", path, {
			secret: admin.secret,
			body: { retention: "2Y", measurements: { names: ["celsius", "humidity"], types: ["float", "float"] } },
		});
		expect(changed.status, JSON.stringify(changed.body)).toBe(200);
		expect(changed.body).toMatchObject({
			retention: "2Y",
			measurements: { names: ["celsius", "humidity"], types: ["float", "float"] },
		});
	});

	it("deletes a table: 404 on every route of its name, which is free at once", async () => {
		const admin = await bootstrap();
		const created = await createTables(admin.secret, { temps: definition() });
		const deleted = await call("DELETE", timeseriesPath("temps"), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body).toEqual(created.temps);
		for (const [method, tail] of [
			["GET", ""],
			["PATCH", ""],
			["DELETE", ""],
			["DELETE", "/data"],
			["GET", "/data?ge=0&le=1"],
		] as const) {
			const res = await call(method, timeseriesPath("temps", tail), {
				secret: admin.secret,
				...(method === "PATCH" ? { body: { retention: "1Y" } } : {}),
			});
			expectError(res, 404, 404102);
		}
		await createTables(admin.secret, { temps: definition() });
	});

	it("truncates a table to an empty ready one", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { temps: definition() });
		const res = await call("DELETE", timeseriesPath("temps", "/data"), { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ stats: { rows: 0, table_size: 0 }, status: "ready" });
	});
});

describe("Timeseries table access", () => {
	const routes = (name: string) =>
		[
			["POST", TIMESERIES, { timeseries: { [name]: definition() } }],
			["GET", TIMESERIES],
			["GET", timeseriesPath(name)],
			["PATCH", timeseriesPath(name), { retention: "1Y" }],
			["DELETE", timeseriesPath(name)],
			["DELETE", timeseriesPath(name, "/data")],
			["GET", timeseriesPath(name, "/data?ge=0&le=1")],
		] as const;

	it("refuses all seven operations to a role with a twin or an entry rule (403102)", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { temps: definition() });
		for (const rules of [{ twin: "twin != null" }, { entry: "entry_name != null" }]) {
			const confined = await userWithRules(admin, rules);
			for (const [method, path, body] of routes("temps")) {
				const res = await call(method, path, { secret: confined.secret, ...(body ? { body } : {}) });
				expectError(res, 403, 403102);
			}
		}
	});

	it("answers another account's table exactly as an absent one, Server-Timing included", async () => {
		const owner = await bootstrap();
		const stranger = await bootstrap();
		await createTables(owner.secret, { theirs: definition() });
		for (const [method, path, body] of routes("theirs").slice(2)) {
			const absentPath = path.replace("theirs", "nothing");
			const options = { secret: stranger.secret, ...(body ? { body } : {}) };
			const other = await call(method, path, options);
			const absent = await call(method, absentPath, options);
			expect(other.status).toBe(404);
			expect(fingerprint(other, (t) => t.replaceAll("theirs", "nothing"))).toEqual(fingerprint(absent));
		}
	});
});

describe("Timeseries measurements changed by an update", () => {
	it("never answers a removed measurement's points as those of one added again under its name", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { temps: definition() });
		const twinRes = await call("POST", "/twins", { secret: admin.secret, body: {} });
		const twin = twinRes.body.uuid as string;
		const at = Math.floor(Date.now() / 1000);
		const write = (value: number) =>
			call("PATCH", `/twins/${twin}/ledgers/personal`, {
				secret: admin.secret,
				body: { entries: { celsius: { value } } },
			});
		const added = await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { celsius: { value: 1, timeseries: { temps: {} } } } },
		});
		expect(added.status).toBe(201);
		const path = timeseriesPath("temps");
		const only = (names: string[]) => ({ measurements: { names, types: names.map(() => "float") } });
		// A kept measurement keeps its type: state is text.
		expect((await call("PATCH", path, { secret: admin.secret, body: only(["state"]) })).status).toBe(400);
		expect((await call("PATCH", path, { secret: admin.secret, body: only(["humidity"]) })).status).toBe(200);
		expect((await call("PATCH", path, { secret: admin.secret, body: only(["humidity", "celsius"]) })).status).toBe(200);
		expect((await write(2)).status).toBe(200);
		const res = await call("GET", timeseriesPath("temps", `/data?ge=${at - 60}&le=${at + 60}&consistent=true`), {
			secret: admin.secret,
		});
		expect(res.status).toBe(200);
		expect(res.body.columns).toEqual(["_timestamp", "twin", "site", "humidity", "celsius"]);
		expect(res.body.rows.map((row: unknown[]) => row[4])).toEqual([2]);
	});
});
