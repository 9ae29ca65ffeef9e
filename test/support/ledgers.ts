// Ledger paths and entries: written through the API, or straight into D1 in bulk for the tests
// that need many ledgers (index builds walk them, usage counts them).
import { expect } from "vitest";
import { call } from "./requests";
import { dbOf } from "./shards";

export function ledger(twin: string, which = "personal", tail = "") {
	return `/twins/${twin}/ledgers/${which}${tail}`;
}

export async function addEntries(secret: string, twin: string, entries: Record<string, unknown>) {
	const res = await call("POST", ledger(twin), { secret, body: { entries } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.entries;
}

// A writer's first ledger write checks its credential in a read of its own, and from then on the
// account's object keeps it and the isolate remembers the caller (docs/design.md, "One round trip
// per write"). Two writes whose Server-Timing a test compares are sent after this, so that the
// first does not pay for both. `twin` is one the writer may write on and no test compares.
export async function warmWriter(secret: string, twin: string) {
	await addEntries(secret, twin, { [`warm${crypto.randomUUID().slice(0, 8)}`]: { value: 1 } });
}

// Ledgers written straight into D1, past the account's object: no index row follows them until
// a build walks them. `size` is what a write through the API would store (no visibility, history
// or publish): the entry's name as JSON, a colon, and its value's compact JSON, in bytes.
export async function seedLedgers(account: string, ledgers: { twin: string; entries: Record<string, unknown> }[]) {
	const db = dbOf(account);
	const statement = db.prepare(
		`INSERT INTO ledger_entries (twin, account, name, value, size, entry_created_ts, entry_updated_ts, value_changed_ts)
		VALUES (?, ?, ?, ?, ?, 1, 1, 1)`,
	);
	const bytes = (text: string) => new TextEncoder().encode(text).length;
	const rows = ledgers.flatMap(({ twin, entries }) =>
		Object.entries(entries).map(([name, value]) => {
			const text = JSON.stringify(value);
			return statement.bind(twin, account, name, text, bytes(JSON.stringify(name)) + 1 + bytes(text));
		}),
	);
	for (let i = 0; i < rows.length; i += 200) await db.batch(rows.slice(i, i + 200));
}
