import { now } from "../../base/time";
import type { IndexDefinition } from "../../db/indexes";
import { checkIndexAccess } from "../../policy/indexes";
import type { CallerId, Host } from "../host";
import * as indexes from "../index-tables";

// The account's object's Indexes tables (docs/indexes.md): definitions here, rows with each
// ledger write, builds and the deletion of old rows by the indexes timer.
export function indexFacet(host: Host, catalog: indexes.IndexCatalog, limits: () => indexes.IndexLimits) {
	return {
		createIndexTables(caller: CallerId, input: Record<string, IndexDefinition>) {
			return host.write(caller, "create_indexes_table", async (db, current) => {
				checkIndexAccess(current, "define");
				const { builds, ...value } = await indexes.createTables(db, catalog, current, input, limits(), now());
				await indexes.queueIndexWork(host, caller.account, builds, undefined);
				return value;
			});
		},

		updateIndexTable(caller: CallerId, name: string, changes: Partial<IndexDefinition>) {
			return host.write(caller, "update_indexes_table", async (db, current) => {
				checkIndexAccess(current, "define");
				const { builds, drop, ...value } = await indexes.updateTable(db, catalog, current, name, changes, now());
				await indexes.queueIndexWork(host, caller.account, builds, drop);
				return value;
			});
		},

		truncateIndexTable(caller: CallerId, name: string) {
			return host.write(caller, "truncate_indexes_table", async (db, current) => {
				checkIndexAccess(current, "define");
				const { builds, drop, ...value } = await indexes.truncateTable(db, catalog, current, name, now());
				await indexes.queueIndexWork(host, caller.account, builds, drop, value.uuid);
				return value;
			});
		},

		deleteIndexTable(caller: CallerId, name: string) {
			return host.write(caller, "delete_indexes_table", async (db, current) => {
				checkIndexAccess(current, "define");
				const { drop, ...value } = await indexes.deleteTable(db, catalog, current, name);
				await indexes.queueIndexWork(host, caller.account, [], drop, value.uuid);
				return value;
			});
		},
	};
}
