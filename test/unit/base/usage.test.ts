import { describe, expect, it } from "vitest";
import { bucketed, bucketKey, fullCounts, hourOf, requestCounts, USAGE_FIELDS } from "../../../src/base/usage";
import { UsageBuffer } from "../../../src/base/usage-buffer";

// 2025-03-09T23:59:59Z and the second after it: the last hour of a day, the first of the next.
const LAST_SECOND = Date.UTC(2025, 2, 9, 23, 59, 59) / 1000;

describe("hours and their keys", () => {
	it("keys an hour YYYY-MM-DD-HH and its day YYYY-MM-DD, in UTC", () => {
		expect(bucketKey(hourOf(LAST_SECOND), "hour")).toBe("2025-03-09-23");
		expect(bucketKey(hourOf(LAST_SECOND), "day")).toBe("2025-03-09");
		expect(bucketKey(hourOf(LAST_SECOND + 1), "hour")).toBe("2025-03-10-00");
		expect(bucketKey(hourOf(LAST_SECOND + 1), "day")).toBe("2025-03-10");
		expect(bucketKey(0, "hour")).toBe("1970-01-01-00");
	});

	it("puts a time in the hour it falls in: the hour's first second in, its end out", () => {
		const hour = hourOf(LAST_SECOND);
		expect(hourOf(hour * 3600)).toBe(hour);
		expect(hourOf(hour * 3600 + 3599.999)).toBe(hour);
		expect(hourOf((hour + 1) * 3600)).toBe(hour + 1);
	});
});

describe("bucketed", () => {
	const hour = hourOf(LAST_SECOND);

	it("sums hours into their days, ascending, every field in the table's order", () => {
		const rows = [
			{ hour: hour + 1, counts: { rest_count: 4 } },
			{ hour, counts: { rest_count: 1, ledger_size_delta: -7 } },
			{ hour: hour - 1, counts: { rest_count: 2, db_read_cost: 3 } },
		];
		const days = bucketed(rows, "day");
		expect(Object.keys(days)).toEqual(["2025-03-09", "2025-03-10"]);
		expect(days["2025-03-09"]).toEqual(fullCounts({ rest_count: 3, db_read_cost: 3, ledger_size_delta: -7 }));
		expect(Object.keys(days["2025-03-10"]!)).toEqual([...USAGE_FIELDS]);
		const hours = bucketed(rows, "hour");
		expect(Object.keys(hours)).toEqual(["2025-03-09-22", "2025-03-09-23", "2025-03-10-00"]);
	});

	it("leaves out hours with no row, keeps one whose counts cancel out", () => {
		expect(bucketed([], "hour")).toEqual({});
		const cancelled = bucketed(
			[
				{ hour, counts: { ledger_size_delta: 5 } },
				{ hour, counts: { ledger_size_delta: -5 } },
			],
			"hour",
		);
		expect(cancelled).toEqual({ "2025-03-09-23": fullCounts({}) });
	});
});

describe("requestCounts", () => {
	it("counts the request and its rows whatever its status, a twin only when made or ended", () => {
		const cost = { rowsRead: 5, rowsWritten: 2 };
		expect(requestCounts("create_twin", 201, cost)).toEqual({
			rest_count: 1,
			db_read_cost: 5,
			db_write_cost: 2,
			twins_created: 1,
		});
		expect(requestCounts("create_twin", 400, cost)).toEqual({ rest_count: 1, db_read_cost: 5, db_write_cost: 2 });
		expect(requestCounts("terminate_twin", 200, cost)).toEqual({
			rest_count: 1,
			db_read_cost: 5,
			db_write_cost: 2,
			twins_terminated: 1,
		});
		expect(requestCounts("terminate_twin", 404, cost)).toEqual({ rest_count: 1, db_read_cost: 5, db_write_cost: 2 });
		expect(requestCounts("get_twin", 200, cost)).toEqual({ rest_count: 1, db_read_cost: 5, db_write_cost: 2 });
	});
});

describe("UsageBuffer", () => {
	it("starts one timer per account until its flush, and adds counts of one (user, hour) together", () => {
		const buffer = new UsageBuffer();
		expect(buffer.add("a", "u", 10, { rest_count: 1 })).toBe(true);
		expect(buffer.add("a", "u", 10, { rest_count: 1, db_read_cost: 2 })).toBe(false);
		expect(buffer.add("a", "v", 11, { rest_count: 1 })).toBe(false);
		expect(buffer.add("b", "w", 10, { rest_count: 1 })).toBe(true);
		expect(buffer.take("a", true)).toEqual([
			{ user: "u", hour: 10, counts: { rest_count: 2, db_read_cost: 2 } },
			{ user: "v", hour: 11, counts: { rest_count: 1 } },
		]);
		// Taken once: the next take finds nothing, the next count starts a new timer.
		expect(buffer.take("a", true)).toEqual([]);
		expect(buffer.add("a", "u", 10, { rest_count: 1 })).toBe(true);
		expect(buffer.size).toBe(2);
	});

	it("lets a read take the counts early without starting a second timer", () => {
		const buffer = new UsageBuffer();
		expect(buffer.add("a", null, 10, { task_publish_topic_count: 3 })).toBe(true);
		expect(buffer.take("a")).toEqual([{ user: null, hour: 10, counts: { task_publish_topic_count: 3 } }]);
		// The timer that first count started still runs: it carries this one.
		expect(buffer.add("a", "u", 10, { rest_count: 1 })).toBe(false);
		expect(buffer.take("a", true)).toEqual([{ user: "u", hour: 10, counts: { rest_count: 1 } }]);
	});

	it("ignores counts of nothing", () => {
		const buffer = new UsageBuffer();
		expect(buffer.add("a", "u", 10, { rest_count: 0 })).toBe(false);
		expect(buffer.take("a")).toEqual([]);
	});
});
