// What an account's usage counts, and the hours and days it is counted in. Counts are kept
// per hour (the hour's index since the epoch, UTC); a day's are the sum of its hours. The
// fields are in the order every bucket of an answer lists them.
export const USAGE_FIELDS = [
	"rest_count",
	"db_read_cost",
	"db_write_cost",
	"twins_created",
	"twins_terminated",
	"ledger_size_delta",
	"task_publish_topic_count",
	"stickers_put",
	"stickers_removed",
	"stickers_expired",
] as const;

export type UsageField = (typeof USAGE_FIELDS)[number];
export type UsageCounts = Partial<Record<UsageField, number>>;

// Counts of one hour, for a user of the account, or for the account alone (`user` null: work
// no user caused, such as an alarm's).
export type UsageRow = { user: string | null; hour: number; counts: UsageCounts };

export type Bucket = "hour" | "day";

const HOUR = 3600;

export function hourOf(at: number): number {
	return Math.floor(at / HOUR);
}

// `YYYY-MM-DD-HH` for an hour, `YYYY-MM-DD` for the day it falls in, UTC. Keys of one kind
// sort as their times do.
export function bucketKey(hour: number, bucket: Bucket): string {
	const iso = new Date(hour * HOUR * 1000).toISOString();
	return bucket === "day" ? iso.slice(0, 10) : `${iso.slice(0, 10)}-${iso.slice(11, 13)}`;
}

// Every field, zeros included, in the table's order.
export function fullCounts(counts: UsageCounts): Record<UsageField, number> {
	return Object.fromEntries(USAGE_FIELDS.map((field) => [field, counts[field] ?? 0])) as Record<UsageField, number>;
}

export function isEmpty(counts: UsageCounts): boolean {
	return USAGE_FIELDS.every((field) => !counts[field]);
}

export function addCounts(into: UsageCounts, counts: UsageCounts) {
	for (const field of USAGE_FIELDS) {
		const value = counts[field];
		if (value) into[field] = (into[field] ?? 0) + value;
	}
}

// Hourly rows (any order) grouped into buckets by key, ascending. A bucket no row fell in is
// left out; one whose counts cancel out (a ledger grown and shrunk back) is not: something
// was counted.
export function bucketed(
	rows: { hour: number; counts: UsageCounts }[],
	bucket: Bucket,
): Record<string, Record<UsageField, number>> {
	const sums = new Map<string, UsageCounts>();
	for (const row of [...rows].sort((a, b) => a.hour - b.hour)) {
		const key = bucketKey(row.hour, bucket);
		const sum = sums.get(key) ?? {};
		addCounts(sum, row.counts);
		sums.set(key, sum);
	}
	const answer: Record<string, Record<UsageField, number>> = {};
	for (const [key, sum] of sums) answer[key] = fullCounts(sum);
	return answer;
}

// What one request authenticated as a user counts: itself, what it cost in D1 (the figures of
// its Server-Timing), and a twin it made or ended.
export function requestCounts(
	operation: string | undefined,
	status: number,
	cost: { rowsRead: number; rowsWritten: number },
): UsageCounts {
	const counts: UsageCounts = { rest_count: 1, db_read_cost: cost.rowsRead, db_write_cost: cost.rowsWritten };
	if (operation === "create_twin" && status === 201) counts.twins_created = 1;
	if (operation === "terminate_twin" && status === 200) counts.twins_terminated = 1;
	return counts;
}
