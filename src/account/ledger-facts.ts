import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../db/client";
import { type EntryRow, readLedger } from "../db/ledgers";
import { type FactKey, factId, factStatement } from "../db/write-facts";

// What the account's object keeps between ledger writes, so that a write needs no read of its
// own (docs/design.md, "One round trip per write"): each fact with the fingerprint SQL gave it
// (db/write-facts.ts), and a ledger's rows. Nothing here is trusted alone: every batch that
// relies on a kept fact guards it, and a batch that fails makes the object forget them all.
// The object starts with nothing after an eviction or a restart (a deploy, with its migrations,
// restarts it), and reads what a write needs in one batch.

type Fact = {
	key: FactKey;
	value: string | null;
	// The ledger's rows, for a ledger fact.
	rows?: EntryRow[];
	bytes: number;
	// The step that read it: a fact read in the current step is fresh, any other was kept.
	step: number;
};

// Kept facts are bounded in count and in the ledgers' bytes; the oldest go first.
const MAX_FACTS = 1024;
const MAX_LEDGER_BYTES = 8 * 1024 * 1024;

export class LedgerFacts {
	private readonly kept = new Map<string, Fact>();
	private bytes = 0;
	private step = 0;

	// A group of writes begins: the facts it reads from here on are fresh.
	begin(): void {
		this.step += 1;
	}

	get(key: FactKey): Fact | undefined {
		return this.kept.get(factId(key));
	}

	fresh(key: FactKey): boolean {
		return this.get(key)?.step === this.step;
	}

	// Reads the facts not kept, each where `dbOf` says its rows live: those of one database in
	// one batch, the databases in parallel. A fact of a database other than `home` is not
	// kept past the step, since no guard in the account's batch can cover it.
	async read(keys: FactKey[], dbOf: (key: FactKey) => { db: Database; home: boolean }): Promise<void> {
		const missing = new Map<string, FactKey>();
		for (const key of keys) if (!this.kept.has(factId(key))) missing.set(factId(key), key);
		const byDb = new Map<Database, FactKey[]>();
		for (const key of missing.values()) {
			const { db } = dbOf(key);
			byDb.set(db, [...(byDb.get(db) ?? []), key]);
		}
		await Promise.all(
			[...byDb].map(async ([db, group]) => {
				const statements = group.flatMap((key): BatchItem<"sqlite">[] =>
					key.kind === "ledger"
						? [factStatement(db, key), readLedger(db, key.twin, key.account)]
						: [factStatement(db, key)],
				);
				const results: unknown[] = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
				let i = 0;
				for (const key of group) {
					const [row] = results[i++] as { fact: string | null }[];
					const rows = key.kind === "ledger" ? (results[i++] as EntryRow[]) : undefined;
					this.put(key, row?.fact ?? null, rows, dbOf(key).home);
				}
			}),
		);
	}

	// A fact as a committed batch left it (a ledger the batch wrote, read back in the same batch).
	put(key: FactKey, value: string | null, rows?: EntryRow[], keep = true): void {
		this.remove(factId(key));
		const bytes = rows?.reduce((total, row) => total + row.size, 0) ?? 0;
		this.kept.set(factId(key), { key, value, rows, bytes, step: this.step });
		this.bytes += bytes;
		if (!keep) return;
		while (this.kept.size > MAX_FACTS || this.bytes > MAX_LEDGER_BYTES) {
			const oldest = this.kept.keys().next().value as string;
			if (oldest === factId(key)) break;
			this.remove(oldest);
		}
	}

	// After the step: the facts of other databases go.
	end(home: (key: FactKey) => boolean): void {
		for (const [id, fact] of this.kept) if (!home(fact.key)) this.remove(id);
	}

	// Who a writer is changes with the account's role, user and secret writes: the object
	// forgets its writers after each (the guards would catch them, at the cost of a failed batch).
	forgetWriters(): void {
		for (const [id, fact] of this.kept) if (fact.key.kind === "secret" || fact.key.kind === "user") this.remove(id);
	}

	// Facts to be read again by the next step.
	drop(keys: FactKey[]): void {
		for (const key of keys) this.remove(factId(key));
	}

	forget(): void {
		this.kept.clear();
		this.bytes = 0;
	}

	private remove(id: string): void {
		const fact = this.kept.get(id);
		if (!fact) return;
		this.bytes -= fact.bytes;
		this.kept.delete(id);
	}
}
