import { now } from "../../base/time";
import { checkTimeseriesAccess } from "../../policy/timeseries";
import type { CallerId, Host } from "../host";
import { TIMER } from "../host";
import * as tables from "../timeseries-tables";

// The account's object's Timeseries tables (docs/timeseries.md): definitions here; points with
// each ledger write (timeseries-feed.ts); fills, deliveries left over and the emptying of old
// chunks by the timeseries timer.
export function timeseriesFacet(
	host: Host,
	catalog: tables.TimeseriesCatalog,
	limits: () => tables.TimeseriesLimits,
	deliver: (account: string) => Promise<boolean>,
) {
	return {
		createTimeseriesTables(caller: CallerId, input: Record<string, tables.TimeseriesInput>) {
			return host.write(caller, "create_timeseries_table", async (db, current) => {
				checkTimeseriesAccess(current);
				return tables.createTables(db, catalog, current, input, limits(), now());
			});
		},

		updateTimeseriesTable(caller: CallerId, name: string, changes: tables.TimeseriesChanges) {
			return host.write(caller, "update_timeseries_table", async (db, current) => {
				checkTimeseriesAccess(current);
				const { fill, ...value } = await tables.updateTable(db, catalog, current, name, changes, now());
				if (fill) await host.timers.by(TIMER.timeseries, caller.account, now());
				return value;
			});
		},

		truncateTimeseriesTable(caller: CallerId, name: string) {
			return host.write(caller, "truncate_timeseries_table", async (db, current) => {
				checkTimeseriesAccess(current);
				const value = await tables.truncateTable(db, catalog, current, name, now());
				await host.timers.by(TIMER.timeseries, caller.account, now());
				return value;
			});
		},

		deleteTimeseriesTable(caller: CallerId, name: string) {
			return host.write(caller, "delete_timeseries_table", async (db, current) => {
				checkTimeseriesAccess(current);
				const value = await tables.deleteTable(db, catalog, current, name);
				await host.timers.by(TIMER.timeseries, caller.account, now());
				return value;
			});
		},

		// A query with consistent=true: the account's pending points reach their chunk objects
		// first. Answers whether every one did.
		deliverTimeseries(account: string) {
			return deliver(account);
		},
	};
}
