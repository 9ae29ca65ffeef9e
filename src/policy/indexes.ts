import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";

// Who may use Indexes tables (docs/indexes.md, "Access"). A definition decides every reader's
// rows, so only a caller that sees its account's whole ledger data (no `twin` and no `entry`
// rule) may write one. A role with a twin rule may read the records and the rows, a page then
// answering only the rows of twins it sees. A row is computed from any entry of its ledger,
// which an entry rule may hide: a role with one reads none of it.
export type IndexUse = "define" | "read";

export function checkIndexAccess(caller: Pick<Caller, "rules">, use: IndexUse): void {
	if (caller.rules.entry !== null) {
		throw new ApiError("escalation", {
			description:
				"Indexes tables are computed from whole ledgers: a role with an entry rule may not define or read them",
		});
	}
	if (use === "define" && caller.rules.twin !== null) {
		throw new ApiError("escalation", {
			description:
				"A definition decides every reader's rows: a role with a twin rule may read Indexes tables, not define them",
		});
	}
}
