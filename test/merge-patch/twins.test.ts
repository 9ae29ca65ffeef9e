import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";

const MERGE = { "content-type": "application/merge-patch+json" };
const patch = (secret: string, twin: string, body: unknown, headers: Record<string, string> = MERGE) =>
	call("PATCH", `/twins/${twin}`, { secret, body, headers });

describe("update_twin with a merge patch", () => {
	it("merges member by member, recursively: null removes, anything else (a list too) replaces", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, {
			site: "north",
			model: "pump-7",
			config: { rpm: 1450, modes: ["a", "b"], old: 1 },
			serial: "A-1",
		});
		const res = await patch(admin.secret, twin, {
			description: { site: "south", serial: null, config: { rpm: 1500, modes: ["c"], old: null, new: true } },
		});
		expect(res.status).toBe(200);
		expect(res.body.description).toEqual({
			site: "south",
			model: "pump-7",
			config: { rpm: 1500, modes: ["c"], new: true },
		});
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual(
			res.body.description,
		);
	});

	it("takes media-type parameters, and reads application/json, another type or none as a replacement", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1, b: 2 });
		const merged = await patch(
			admin.secret,
			twin,
			{ description: { a: 3 } },
			{ "content-type": "Application/Merge-Patch+JSON; charset=utf-8" },
		);
		expect(merged.body.description).toEqual({ a: 3, b: 2 });
		for (const type of ["application/json", "text/plain"]) {
			expect(
				(await patch(admin.secret, twin, { description: { c: 1 } }, { "content-type": type })).body.description,
			).toEqual({ c: 1 });
		}
		const untyped = await call("PATCH", `/twins/${twin}`, {
			secret: admin.secret,
			body: JSON.stringify({ description: { d: null } }),
			headers: { "content-type": "" },
		});
		expect(untyped.body.description).toEqual({ d: null });
	});

	it("keeps both of two concurrent patches of different keys", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { base: 0 });
		const keys = Array.from({ length: 8 }, (_, i) => `k${i}`);
		const answers = await Promise.all(keys.map((key, i) => patch(admin.secret, twin, { description: { [key]: i } })));
		expect(answers.map((res) => res.status)).toEqual(keys.map(() => 200));
		const stored = await call("GET", `/twins/${twin}`, { secret: admin.secret });
		expect(stored.body.description).toEqual({ base: 0, ...Object.fromEntries(keys.map((key, i) => [key, i])) });
	});

	it("changes nothing, updated_ts included, when the merged description is the stored one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1, nested: { b: [1, 2] } });
		const before = await call("GET", `/twins/${twin}`, { secret: admin.secret });
		await new Promise((resolve) => setTimeout(resolve, 5));
		const same = await patch(admin.secret, twin, { description: { a: 1, absent: null, nested: { b: [1, 2] } } });
		expect(same.status).toBe(200);
		expect(same.body).toEqual(before.body);
	});

	it("validates the merged description as one: its keys, and 32 KiB once merged", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { big: "x".repeat(20_000) });
		const over = await patch(admin.secret, twin, { description: { more: "y".repeat(13_000) } });
		expectError(over, 400, 400101);
		expect(over.body.details).toEqual([{ path: "description", message: expect.stringContaining("32768 bytes") }]);
		// Removing the large member in the same patch makes room.
		expect((await patch(admin.secret, twin, { description: { big: null, more: "y".repeat(13_000) } })).status).toBe(
			200,
		);
		const badKey = await patch(admin.secret, twin, { description: { Bad: 1 } });
		expectError(badKey, 400, 400101);
		expect(badKey.body.details).toContainEqual({ path: "description.Bad", message: expect.any(String) });
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({
			more: "y".repeat(13_000),
		});
	});

	it("refuses a null description or another member with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1 });
		for (const [body, path] of [
			[{ description: null }, "description"],
			[{ description: {}, owner: "me" }, "owner"],
		] as const) {
			const res = await patch(admin.secret, twin, body);
			expectError(res, 400, 400101);
			expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
		}
	});

	it("refuses a JSON Patch with 415251 naming the formats it reads, and writes nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1 });
		const res = await patch(admin.secret, twin, [{ op: "replace", path: "/description/a", value: 2 }], {
			"content-type": "application/json-patch+json",
		});
		expectError(res, 415, 415251);
		expect(res.headers.get("accept-patch")).toBe("application/json, application/merge-patch+json");
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({ a: 1 });
	});

	it("keeps 404102 for a hidden twin, 403103 for another account's, 400103 for a terminated one", async () => {
		const owner = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(owner.secret, { open: true });
		expectError(await patch(other.secret, twin, { description: { a: 1 } }), 404, 404102);
		const viewer = await userWithRules(other, { twin: "TWIN.open == true" });
		expectError(await patch(viewer.secret, twin, { description: { a: 1 } }), 403, 403103);
		expect((await call("DELETE", `/twins/${twin}`, { secret: owner.secret })).status).toBe(200);
		expectError(await patch(owner.secret, twin, { description: { a: 1 } }), 400, 400103);
	});
});

describe("other PATCH routes", () => {
	it("read any content type as JSON, a JSON Patch's too", async () => {
		const admin = await bootstrap();
		const res = await call("PATCH", "/account", {
			secret: admin.secret,
			body: { resource_access_log: null },
			headers: { "content-type": "application/json-patch+json" },
		});
		expect(res.status).toBe(200);
	});
});
