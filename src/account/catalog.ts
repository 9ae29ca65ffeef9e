// An account's definitions of one kind (its Indexes or Timeseries tables) as D1 holds them after
// the last commit. Only the account's object writes them, so it keeps them in memory: a ledger
// write of an account with no table reads nothing more. Loading them is the object's own cost,
// once in its life, not the request's that happens to come first (`read` is unmetered): else the
// first write after a restart would cost one query more in Server-Timing than the same write a
// moment later. `keep` makes what is kept of a row (its rule and templates parsed, say).
export class Catalog<Row extends { uuid: string }, Kept> {
	private kept: Map<string, Kept> | undefined;

	constructor(
		private readonly read: (account: string) => Promise<Row[]>,
		private readonly keep: (row: Row) => Kept,
	) {}

	async all(account: string): Promise<Kept[]> {
		this.kept ??= new Map((await this.read(account)).map((row) => [row.uuid, this.keep(row)]));
		return [...this.kept.values()];
	}

	// After a commit that changed a definition's row in D1; a write whose batch failed forgets all.
	put(row: Row) {
		this.kept?.set(row.uuid, this.keep(row));
	}

	remove(uuid: string) {
		this.kept?.delete(uuid);
	}

	forget() {
		this.kept = undefined;
	}
}
