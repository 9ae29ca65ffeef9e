import { accountLimit, MAX_TWIN_DOCS_CEILING } from "../../base/limits";
import { now } from "../../base/time";
import { database } from "../../db/client";
import type { LineMark } from "../../db/jobs";
import * as docs from "../doc-writes";
import { docStores, movesOf } from "../doc-moves";
import { type CallerId, type Host, TIMER } from "../host";

// The account's object's upload URLs and docs (docs/files.md): its methods for them, run in its
// serialized step. The twin is checked visible by the caller. Each user's write first finishes
// the account's moves committed before it (doc-moves.ts).
export function docFacet(host: Host) {
	const moves = movesOf(host);
	const limits = (): docs.DocLimits => ({
		uploads: Number(host.env.MAX_UPLOADS),
		perTwin: accountLimit(host.env.MAX_TWIN_DOCS, MAX_TWIN_DOCS_CEILING),
		bytes: Number(host.env.MAX_DOC_BYTES),
	});

	// After a write that let go of objects: delete them from R2 now, or when the docs timer
	// comes, when R2 fails (their keys wait in doc_garbage, written in the write's own batch).
	// The tidying is the object's own work, outside the request's meter: it reads the account's
	// expired uploads and garbage, other users' included, which the caller's Server-Timing must
	// not count.
	const tidyingAfter = async <T>(account: string, write: Promise<T>): Promise<T> => {
		const value = await write;
		const next = await docs.tidyDocs(database(host.home()), host.env.DOCS, account, now());
		if (next !== undefined) await host.timers.by(TIMER.docs, account, next);
		return value;
	};

	return {
		createUpload(caller: CallerId, upload: { handler: string; tokenHash: string; validity_ts: number }) {
			return host.write(caller, "create_upload_url", async (db, current) => {
				await moves.settle(current.account);
				const created = await docs.createUpload(db, current, upload, limits(), now());
				await host.timers.by(TIMER.docs, caller.account, upload.validity_ts);
				return created;
			});
		},

		invalidateUpload(caller: CallerId, handler: string) {
			return host.write(caller, "invalidate_upload_url", async (db, current, meter) => {
				await moves.settle(current.account);
				return tidyingAfter(current.account, docs.invalidateUpload(db, meter, current, handler, now()));
			});
		},

		// A PUT to an upload URL: no user calls, the URL's token is the credential. Once claimed,
		// the docs timer releases the URL at the PUT's lease unless the PUT renews it meanwhile.
		// (Should the object die between the claim and the timer, the next PUT's claim still
		// takes over a lease that has passed.)
		claimUpload(account: string, handler: string, tokenHash: string, length: number) {
			return host.serialized(async (db, meter) => {
				const at = now();
				const { lease_ts, ...claimed } = await docs.claimUpload(
					db,
					meter,
					account,
					handler,
					tokenHash,
					length,
					limits(),
					at,
				);
				await host.timers.by(TIMER.docs, account, lease_ts);
				return claimed;
			});
		},

		renewUpload(handler: string, object: string) {
			return host.serialized((db) => docs.renewUpload(db, handler, object, now()));
		},

		finishUpload(handler: string, object: string, hash: string, contentType: string) {
			return host.serialized((db) => docs.finishUpload(db, host.env.DOCS, handler, object, hash, contentType));
		},

		reopenUpload(account: string, handler: string, object: string) {
			return host.serialized((db) => docs.reopenUpload(db, account, handler, object));
		},

		attachDocs(caller: CallerId, twin: string, input: docs.AttachInput) {
			return host.write(caller, "attach_twin_doc", async (db, current, meter) => {
				await moves.settle(current.account);
				const stores = await docStores(host.env, db, meter, current.account, twin);
				return docs.attachDocs(stores, moves, meter, current, twin, input, limits(), now());
			});
		},

		// `mark`: the call is a batch line (doc-writes.ts says where its mark commits).
		updateDoc(
			caller: CallerId,
			twin: string,
			name: string,
			description: Record<string, unknown> | null | undefined,
			mark?: LineMark,
		) {
			return host.write(caller, "update_twin_doc", async (db, current, meter) => {
				await moves.settle(current.account);
				const stores = await docStores(host.env, db, meter, current.account, twin);
				return docs.updateDoc(stores, current, twin, name, description, now(), mark);
			});
		},

		deleteDoc(caller: CallerId, twin: string, name: string, mark?: LineMark) {
			return host.write(caller, "delete_twin_doc", async (db, current, meter) => {
				await moves.settle(current.account);
				const stores = await docStores(host.env, db, meter, current.account, twin);
				return tidyingAfter(current.account, docs.deleteDoc(stores, moves, current, twin, name, now(), mark));
			});
		},

		deleteDocs(caller: CallerId, twin: string) {
			return host.write(caller, "delete_twin_docs", async (db, current, meter) => {
				await moves.settle(current.account);
				const stores = await docStores(host.env, db, meter, current.account, twin);
				return tidyingAfter(current.account, docs.deleteDocs(stores, moves, current, twin, now()));
			});
		},
	};
}
