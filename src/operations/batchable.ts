import type { Operation } from "../operations/operation";
import type { OperationName } from "../policy/names";
import {
	addTwinLedgerEntry,
	deleteTwinLedgerEntry,
	updateTwinLedgerEntry,
	updateTwinLedgerEntryValue,
} from "../operations/ledgers";
import { createTwin, terminateTwin, updateTwin } from "../operations/twins";
import { createTwinIdentity, deleteTwinIdentity, updateTwinIdentity } from "../operations/identities";
import { deleteTwinDoc, updateTwinDoc } from "../operations/docs";
import { putSticker, removeSticker } from "../operations/stickers";

// The operations a batch may call (docs/batches.md, "The input file"): the writes to what twins hold.
// Users, roles and credentials need the escalation check of each write; handlers, webhooks,
// grants, indexes, the account and jobs themselves are not batched (jobs do not nest). Each
// with the method and route a request of it takes (its request log line names them; a test
// holds them equal to the route table), and its path parameters by their names in a line,
// mapped to the operation's own (a doc's `doc_name` is the route's `name`).
export type Batchable = {
	operation: Operation;
	method: "POST" | "PATCH" | "DELETE";
	path: string;
	params: Record<string, string>;
};

const TWIN = { twin: "twin" };

export const BATCHABLE = {
	create_twin: { operation: createTwin, method: "POST", path: "/twins", params: {} },
	update_twin: { operation: updateTwin, method: "PATCH", path: "/twins/:twin", params: TWIN },
	terminate_twin: { operation: terminateTwin, method: "DELETE", path: "/twins/:twin", params: TWIN },
	create_twin_identity: {
		operation: createTwinIdentity,
		method: "POST",
		path: "/twins/:twin/identities",
		params: TWIN,
	},
	update_twin_identity: {
		operation: updateTwinIdentity,
		method: "PATCH",
		path: "/twins/:twin/identities/:identity",
		params: { ...TWIN, identity: "identity" },
	},
	delete_twin_identity: {
		operation: deleteTwinIdentity,
		method: "DELETE",
		path: "/twins/:twin/identities/:identity",
		params: { ...TWIN, identity: "identity" },
	},
	add_twin_ledger_entry: {
		operation: addTwinLedgerEntry,
		method: "POST",
		path: "/twins/:twin/ledgers/:ledger",
		params: { ...TWIN, ledger: "ledger" },
	},
	update_twin_ledger_entry: {
		operation: updateTwinLedgerEntry,
		method: "PATCH",
		path: "/twins/:twin/ledgers/:ledger",
		params: { ...TWIN, ledger: "ledger" },
	},
	update_twin_ledger_entry_value: {
		operation: updateTwinLedgerEntryValue,
		method: "PATCH",
		path: "/twins/:twin/ledgers/:ledger/value",
		params: { ...TWIN, ledger: "ledger" },
	},
	delete_twin_ledger_entry: {
		operation: deleteTwinLedgerEntry,
		method: "DELETE",
		path: "/twins/:twin/ledgers/:ledger",
		params: { ...TWIN, ledger: "ledger" },
	},
	update_twin_doc: {
		operation: updateTwinDoc,
		method: "PATCH",
		path: "/twins/:twin/docs/:name+",
		params: { ...TWIN, doc_name: "name" },
	},
	delete_twin_doc: {
		operation: deleteTwinDoc,
		method: "DELETE",
		path: "/twins/:twin/docs/:name+",
		params: { ...TWIN, doc_name: "name" },
	},
	put_sticker: { operation: putSticker, method: "POST", path: "/twins/:twin/stickers", params: TWIN },
	remove_sticker: {
		operation: removeSticker,
		method: "DELETE",
		path: "/twins/:twin/stickers/:color",
		params: { ...TWIN, color: "color" },
	},
} satisfies Partial<Record<OperationName, Batchable>>;

export type BatchableName = keyof typeof BATCHABLE;

export const isBatchable = (name: string): name is BatchableName => Object.hasOwn(BATCHABLE, name);
