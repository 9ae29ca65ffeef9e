// One ledger write straight on D1, past the account's object and its groups: the ledger read,
// the write planned on it (src/account/ledger-writes.ts) and committed in one batch. For tests
// of what a plan writes (its statements, its messages, their bounds) with a database of their own.
import type { Database } from "../../src/db/client";
import { readLedger, runBatch } from "../../src/db/ledgers";
import { type LedgerWrite, ledgerOf, planLedgerWrite } from "../../src/account/ledger-writes";

// `beforeCommit` runs before a batch with notification messages commits, where the object arms
// its drain.
export async function writeLedger(
	db: Database,
	write: LedgerWrite,
	at: number,
	notify: { fanOut?: number; beforeCommit?: () => Promise<void> } = {},
) {
	const rows = await readLedger(db, write.twin.uuid, write.writer.account);
	const plan = await planLedgerWrite(db, write, ledgerOf(rows), at, { fanOut: notify.fanOut });
	if (plan.published) await notify.beforeCommit?.();
	await runBatch(db, plan.statements);
	plan.committed();
	return { ...plan.value, published: plan.published, grown: plan.grown };
}
