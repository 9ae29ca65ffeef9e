import { isVisible, type TwinView } from "../rules/visibility";
import {
	accountLimit,
	MAX_IDENTITY_PROVIDERS_CEILING,
	MAX_INDEXES_TABLES_CEILING,
	MAX_ROLES_CEILING,
	MAX_TWIN_DOCS_CEILING,
	MAX_USERS_CEILING,
} from "../base/limits";
import { type Database, database } from "../db/client";
import type { IdentityChanges } from "../db/identities";
import { D1Meter } from "../db/meter";
import { ApiError } from "../base/errors";
import { type Caller, type Claim, type Principal, principalOf } from "../base/caller";
import { now } from "../base/time";
import { bindingOf, CursorStore } from "./cursors";
import { Journal } from "./journal";
import { type LedgerWrite, writeLedger } from "./ledger-writes";
import { drainOutbox, drainRetryAt } from "../notifications/outbox-drain";
import { Timers } from "./timers";
import { type Host, TIMER } from "./host";
import type { Outcome } from "./outcome";
import { credentialOf, credentialStatement, type CredentialRow } from "../db/auth";
import { type PageRow, twinPageStatement } from "../db/twins";
import { checkCredential, checkStatement } from "../policy/credential";
import { decide } from "../policy/statement";
import { cutPage, pageJson, planPage, type ScanRequest } from "./scan";
import * as secrets from "./secret-writes";
import * as identities from "./identity-writes";
import * as writes from "./role-user-writes";
import * as federation from "./federation-writes";
import * as docs from "./doc-writes";
import * as indexes from "./index-tables";
import type { IndexDefinition } from "../db/indexes";
import { checkIndexAccess } from "../policy/indexes";
import { revokeStreams, type StreamChange } from "../notifications/streams/client";
import { CLOSE } from "../notifications/streams/frames";
import * as stickers from "./sticker-writes";
import type { StickerKey } from "../db/stickers";
import { UsageStore } from "./usage-store";
import { type Bucket, bucketed, type UsageRow } from "../base/usage";

// Objects from before the schedule (timers.ts) kept their account under this key, and the
// earliest sticker expiry under the other: their first alarm runs every step once.
const LEGACY_KEYS = ["outbox-account", "sticker-due"];

export type ScanAnswer = { stale: true } | { stale?: undefined; page: string };

const ownerOf = (caller: Caller, request: ScanRequest) => ({
	user: caller.user,
	binding: bindingOf(request.match, request.details),
});

// The same principal: both are built by checkCredential from a credential row, so their keys
// come in one order.
const sameCaller = (checked: Principal, claimed: Caller) =>
	JSON.stringify(checked) === JSON.stringify(principalOf(claimed));

// Writes take only who the caller is: what it may do is read again inside the serialized step.
// The request's dictionary and credential travel with it.
type CallerId = Pick<Caller, "account" | "user" | "dict" | "credential">;

// One object per account, addressed by the account uuid. Writes to roles, users and their
// credentials, identities and ledgers run here one at a time, each with the checks that guard
// it; all but ledger writes leave a line in the object's journal. Scan cursors are
// issued and kept here too, with an alarm that sweeps the expired ones; the same alarm drains
// notification messages a ledger write committed (src/notifications/outbox-drain.ts).
export class AccountObject {
	private tail: Promise<unknown> = Promise.resolve();
	private draining: Promise<unknown> = Promise.resolve();
	private readonly cursors: CursorStore;
	private readonly lines: Journal;
	private readonly catalog: indexes.IndexCatalog;
	// The account's usage by hour (docs/usage.md): the Worker's counts arrive by addUsage, the object's
	// own (ledger bytes, published messages, stickers) are added where they happen.
	private readonly usage: UsageStore;
	// Every kind of background work, each a timer with its step (timers.ts).
	private readonly timers: Timers;
	// What the features' background steps borrow from the object (host.ts).
	private readonly host: Host;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {
		this.cursors = new CursorStore(ctx.storage.sql);
		this.lines = new Journal(ctx.storage.sql);
		this.usage = new UsageStore(ctx.storage.sql);
		this.catalog = new indexes.IndexCatalog(() => database(env.DB));
		this.timers = new Timers(ctx.storage, {
			[TIMER.outbox]: async (account) => ((await this.drain(account)) ? drainRetryAt(now()) : undefined),
			[TIMER.cursors]: async () => this.cursors.sweepStep(now()),
			[TIMER.docs]: (account) => docs.tidyStep(this.host, account),
			[TIMER.indexes]: (account) => indexes.indexStep(this.host, this.catalog, account, this.indexLimits()),
			[TIMER.stickers]: (account) => stickers.expiryStep(this.host, account),
		});
		const object = this;
		const host: Host = {
			// Read at each use: the object's env is the one it runs with now.
			get env() {
				return object.env;
			},
			storage: ctx.storage,
			timers: this.timers,
			usage: this.usage,
			serialized: (work) => this.serialized(work),
			drain: (account) => this.drain(account),
			armDrain: (account) => this.timers.by(TIMER.outbox, account, drainRetryAt(now())),
		};
		this.host = host;
	}

	createRole(caller: CallerId, input: writes.RoleInput) {
		return this.write(caller, "create_user_role", (db, current) =>
			writes.createRole(db, current, input, this.limits()),
		);
	}

	// A changed statement or rules reach the streams of the role's holders: they read as the role
	// now is, or end when it no longer allows streaming (they reconnect and are checked as they
	// now are); a new name changes nothing.
	updateRole(caller: CallerId, role: string, changes: writes.RolePatch) {
		const write = this.write(caller, "update_user_role", (db, current) =>
			writes.updateRole(db, current, role, changes),
		);
		const permission = changes.statement !== undefined || changes.rules !== undefined;
		return this.tellStreams(write, (updated) => {
			if (!permission) return undefined;
			if (!decide(updated.statement, "stream_notifications").allowed)
				return { account: caller.account, role, code: CLOSE.permissionEnded };
			return { account: caller.account, role, reader: { statement: updated.statement, rules: updated.rules } };
		});
	}

	deleteRole(caller: CallerId, role: string) {
		return this.write(caller, "delete_user_role", (db, current) => writes.deleteRole(db, current, role));
	}

	createUser(caller: CallerId, input: writes.UserInput) {
		return this.write(caller, "create_user", (db, current) => writes.createUser(db, current, input, this.limits()));
	}

	// A user given another role or description: its streams read as it now is, or end when its
	// role no longer allows streaming. `merge`: the description given is a merge patch of the
	// stored one.
	updateUser(caller: CallerId, user: string, changes: Partial<writes.UserInput>, merge: boolean) {
		const write = this.write(caller, "update_user", (db, current) =>
			writes.updateUser(db, current, user, changes, merge),
		);
		return this.tellStreams(write, async () => {
			if (changes.role === undefined && changes.description === undefined) return undefined;
			const now = await writes.currentCaller(database(this.env.DB), { account: caller.account, user });
			if (!decide(now.statement, "stream_notifications").allowed)
				return { account: caller.account, user, code: CLOSE.permissionEnded };
			const { role, statement, rules, description } = now;
			return { account: caller.account, user, reader: { role, statement, rules, description } };
		});
	}

	deleteUser(caller: CallerId, user: string) {
		const write = this.write(caller, "delete_user", (db, current) => writes.deleteUser(db, current, user));
		return this.tellStreams(write, () => ({ account: caller.account, user, code: CLOSE.credentialEnded }));
	}

	issuePin(caller: CallerId, user: string, pin: secrets.PinInput) {
		return this.write(caller, "create_user_secret_pin", (db, current) => secrets.issuePin(db, current, user, pin));
	}

	// The user's streams learn the new validity: one set in the past ends them at once.
	changeSecretValidity(caller: CallerId, user: string, validity_ts: number | null) {
		const work = (db: Database, current: Caller) => secrets.changeSecretValidity(db, current, user, validity_ts);
		return this.tellStreams(this.write(caller, "update_user_secret", work), () => ({
			account: caller.account,
			user,
			validity_ts,
		}));
	}

	removeSecret(caller: CallerId, user: string) {
		const write = this.write(caller, "delete_user_secret", (db, current) => secrets.removeSecret(db, current, user));
		return this.tellStreams(write, () => ({ account: caller.account, user, code: CLOSE.credentialEnded }));
	}

	// Identity providers and links (docs/sign-in.md). A provider changed or deleted ends the
	// streams of the tokens its exchanges gave; a link deleted, its user's streams (they
	// reconnect with what still stands).
	createProvider(caller: CallerId, input: federation.ProviderInput) {
		const limit = accountLimit(this.env.MAX_IDENTITY_PROVIDERS, MAX_IDENTITY_PROVIDERS_CEILING);
		return this.write(caller, "create_identity_provider", (db, current) =>
			federation.createProvider(db, current, input, limit),
		);
	}

	updateProvider(caller: CallerId, provider: string, changes: Partial<federation.ProviderInput>) {
		const write = this.write(caller, "update_identity_provider", (db, current) =>
			federation.updateProvider(db, current, provider, changes),
		);
		return this.tellStreams(write, () => ({ account: caller.account, provider, code: CLOSE.credentialEnded }));
	}

	deleteProvider(caller: CallerId, provider: string) {
		const write = this.write(caller, "delete_identity_provider", (db, current) =>
			federation.deleteProvider(db, current, provider),
		);
		return this.tellStreams(write, () => ({ account: caller.account, provider, code: CLOSE.credentialEnded }));
	}

	createLink(caller: CallerId, user: string, link: { provider: string; subject: string; proven: boolean }) {
		return this.write(caller, "create_user_external_id", (db, current) =>
			federation.createLink(db, current, user, link),
		);
	}

	deleteLink(caller: CallerId, user: string, provider: string) {
		const write = this.write(caller, "delete_user_external_id", (db, current) =>
			federation.deleteLink(db, current, user, provider),
		);
		return this.tellStreams(write, () => ({ account: caller.account, user, provider, code: CLOSE.credentialEnded }));
	}

	// An exchange's user for a subject nobody is linked to yet, made once however many exchanges
	// of it arrive together.
	provision(provisioning: federation.Provisioning) {
		return this.serialized(async (db) => {
			const made = await federation.provision(db, provisioning, this.limits().users);
			if (made.provisioned) this.lines.record(now(), made.user, "exchange_user_token", made.user);
			return made;
		});
	}

	// Once a change to who a user is, or what it may do, has committed: the streams it touches
	// hear of it (revokeStreams never fails the write). Outside the serialized step, so that the
	// account's next write does not wait on the stream objects.
	private async tellStreams<T>(
		write: Promise<Outcome<T>>,
		change: (value: T) => StreamChange | undefined | Promise<StreamChange | undefined>,
	): Promise<Outcome<T>> {
		const outcome = await write;
		const told = outcome.ok ? await change(outcome.value) : undefined;
		if (told) await revokeStreams(this.env, told);
		return outcome;
	}

	// Identity writes of this account, on any twin it can see (checked by the caller).
	createIdentities(caller: CallerId, twin: TwinView, input: identities.IdentityInput) {
		return this.write(caller, "create_twin_identity", (db, current, meter) =>
			identities.createIdentities(db, meter, current, twin, input),
		);
	}

	updateIdentity(caller: CallerId, twin: string, identity: string, changes: IdentityChanges) {
		return this.write(caller, "update_twin_identity", (db) =>
			identities.updateIdentity(db, caller.account, twin, identity, changes),
		);
	}

	deleteIdentity(caller: CallerId, twin: string, identity: string) {
		return this.write(caller, "delete_twin_identity", (db) =>
			identities.removeIdentity(db, caller.account, twin, identity),
		);
	}

	// Upload URLs and docs of this account (the twin checked visible by the caller).
	createUpload(caller: CallerId, upload: { handler: string; tokenHash: string; validity_ts: number }) {
		return this.write(caller, "create_upload_url", async (db, current) => {
			const created = await docs.createUpload(db, current, upload, this.docLimits(), now());
			await this.timers.by(TIMER.docs, caller.account, upload.validity_ts);
			return created;
		});
	}

	invalidateUpload(caller: CallerId, handler: string) {
		return this.write(caller, "invalidate_upload_url", (db, current, meter) =>
			this.tidyingAfter(current.account, docs.invalidateUpload(db, meter, current, handler, now())),
		);
	}

	// A PUT to an upload URL: no user calls, the URL's token is the credential. Once claimed, the
	// alarm releases the URL at the PUT's lease unless the PUT renews it meanwhile. (Should the
	// object die between the claim and the alarm, the next PUT's claim still takes over a lease
	// that has passed.)
	claimUpload(account: string, handler: string, tokenHash: string, length: number) {
		return this.serialized(async (db, meter) => {
			const at = now();
			const { lease_ts, ...claimed } = await docs.claimUpload(
				db,
				meter,
				account,
				handler,
				tokenHash,
				length,
				this.docLimits(),
				at,
			);
			// The docs timer ends the lease unless the PUT renews it meanwhile.
			await this.timers.by(TIMER.docs, account, lease_ts);
			return claimed;
		});
	}

	renewUpload(handler: string, object: string) {
		return this.serialized((db) => docs.renewUpload(db, handler, object, now()));
	}

	finishUpload(handler: string, object: string, hash: string, contentType: string) {
		return this.serialized((db) => docs.finishUpload(db, this.env.DOCS, handler, object, hash, contentType));
	}

	reopenUpload(account: string, handler: string, object: string) {
		return this.serialized((db) => docs.reopenUpload(db, account, handler, object));
	}

	attachDocs(caller: CallerId, twin: string, input: docs.AttachInput) {
		return this.write(caller, "attach_twin_doc", (db, current, meter) =>
			docs.attachDocs(db, meter, current, twin, input, this.docLimits(), now()),
		);
	}

	updateDoc(caller: CallerId, twin: string, name: string, description: Record<string, unknown> | null | undefined) {
		return this.write(caller, "update_twin_doc", (db, current) =>
			docs.updateDoc(db, current, twin, name, description, now()),
		);
	}

	deleteDoc(caller: CallerId, twin: string, name: string) {
		return this.write(caller, "delete_twin_doc", (db, current) =>
			this.tidyingAfter(current.account, docs.deleteDoc(db, current, twin, name, now())),
		);
	}

	deleteDocs(caller: CallerId, twin: string) {
		return this.write(caller, "delete_twin_docs", (db, current) =>
			this.tidyingAfter(current.account, docs.deleteDocs(db, current, twin, now())),
		);
	}

	// Stickers of this account: put and removed here (a recipient of another account calls this
	// object), ended by the alarm at their validity_ts. The alarm is armed before the put
	// commits, so a crash right after the commit still finds it set.
	putStickers(caller: CallerId, twin: string, input: stickers.StickerInput) {
		return this.write(caller, "put_sticker", async (db, current, meter) => {
			const account = current.account;
			await this.timers.by(TIMER.stickers, account, stickers.earliestExpiry(input, now()));
			const limit = Number(this.env.MAX_STICKERS);
			const at = now();
			const { published, expired, ...value } = await stickers.putStickers(
				db,
				meter,
				current,
				twin,
				input,
				limit,
				this.stickerContext(account),
				at,
			);
			this.usage.add(at, current.user, { stickers_put: Object.keys(input).length });
			// Expired colors the put met count as the alarm's, the account's alone.
			if (expired) this.usage.add(at, null, { stickers_expired: expired });
			if (published) await this.drain(account);
			return value;
		});
	}

	removeSticker(caller: CallerId, key: StickerKey) {
		return this.write(caller, "remove_sticker", async (db, current, meter) => {
			const at = now();
			const { published, ...value } = await stickers.removeSticker(
				db,
				meter,
				current,
				key,
				this.stickerContext(key.account),
				at,
			);
			// The sticker's account counts it; under the remover only when it is one of its users.
			this.usage.add(at, current.account === key.account ? current.user : null, { stickers_removed: 1 });
			if (published) await this.drain(key.account);
			return value;
		});
	}

	private stickerContext(account: string): stickers.StickerContext {
		return {
			plain: database(this.env.DB),
			fanOut: Number(this.env.MAX_SUBSCRIPTIONS),
			beforeCommit: () => this.host.armDrain(account),
		};
	}

	// Indexes tables of this account: definitions here, rows with each ledger write, builds and
	// the deletion of old rows from the alarm.
	createIndexTables(caller: CallerId, input: Record<string, IndexDefinition>) {
		return this.write(caller, "create_indexes_table", async (db, current) => {
			checkIndexAccess(current, "define");
			const { builds, ...value } = await indexes.createTables(
				db,
				this.catalog,
				current,
				input,
				this.indexLimits(),
				now(),
			);
			await indexes.queueIndexWork(this.host, caller.account, builds, undefined);
			return value;
		});
	}

	updateIndexTable(caller: CallerId, name: string, changes: Partial<IndexDefinition>) {
		return this.write(caller, "update_indexes_table", async (db, current) => {
			checkIndexAccess(current, "define");
			const { builds, drop, ...value } = await indexes.updateTable(db, this.catalog, current, name, changes, now());
			await indexes.queueIndexWork(this.host, caller.account, builds, drop);
			return value;
		});
	}

	truncateIndexTable(caller: CallerId, name: string) {
		return this.write(caller, "truncate_indexes_table", async (db, current) => {
			checkIndexAccess(current, "define");
			const { builds, drop, ...value } = await indexes.truncateTable(db, this.catalog, current, name, now());
			await indexes.queueIndexWork(this.host, caller.account, builds, drop, value.uuid);
			return value;
		});
	}

	deleteIndexTable(caller: CallerId, name: string) {
		return this.write(caller, "delete_indexes_table", async (db, current) => {
			checkIndexAccess(current, "define");
			const { drop, ...value } = await indexes.deleteTable(db, this.catalog, current, name);
			await indexes.queueIndexWork(this.host, caller.account, [], drop, value.uuid);
			return value;
		});
	}

	// After a write that let go of objects: delete them from R2 now, or from the alarm when R2
	// fails (their keys wait in doc_garbage, written in the write's own batch). The tidying is
	// the object's own work, outside the request's meter: it reads the account's expired
	// uploads and garbage, other users' included, which the caller's Server-Timing must not count.
	private async tidyingAfter<T>(account: string, write: Promise<T>): Promise<T> {
		const value = await write;
		const next = await docs.tidyDocs(database(this.env.DB), this.env.DOCS, account, now());
		if (next !== undefined) await this.timers.by(TIMER.docs, account, next);
		return value;
	}

	// One call per scan page: resolve the cursor, read the page from D1, issue the next cursor.
	// A caller the Worker checked reads in a session that continues the request's: from a
	// replica at least as new as the check, or the primary. A credential the Worker did not
	// check (`hash`, with `caller` the isolate's guess from an earlier request) is checked here:
	// its row comes from the primary in the same D1 batch as the page, and nothing is answered,
	// nor any cursor used, before the row shows the secret alive and its role allowing
	// scan_twins. `stale` when the row no longer stands for the guess exactly (another user,
	// role, rules or description): the Worker then checks the credential itself and asks again.
	async scan(credential: Claim, cursor: string | undefined, request: ScanRequest, bookmark: string | null = null) {
		const meter = new D1Meter();
		return this.answer(meter, async (at): Promise<ScanAnswer> => {
			const { caller: claimed, hash } = credential;
			const d1 = meter.wrap(
				this.env.DB.withSession(hash === undefined ? (bookmark ?? "first-primary") : "first-primary"),
			);
			// The cursor is only looked at, not used, until the credential holds.
			const found = cursor === undefined ? undefined : this.cursors.find(cursor, ownerOf(claimed, request), at);
			const after = cursor === undefined ? "" : found?.after;
			const plan = after === undefined ? undefined : planPage(claimed, after, request, at);
			const statements = [
				...(hash === undefined ? [] : [credentialStatement(d1, hash)]),
				...(plan ? [twinPageStatement(d1, plan.query)] : []),
			];
			const results = statements.length ? await d1.batch(statements) : [];
			if (hash !== undefined) {
				const caller = checkCredential(credentialOf(results.shift()?.results[0] as CredentialRow | undefined), at);
				if (!sameCaller(caller, claimed)) return { stale: true };
				checkStatement(caller, "scan_twins");
			}
			if (after === undefined || plan === undefined) {
				throw new ApiError("invalid_cursor", {
					description: "The cursor is unknown, expired, or belongs to another user or scan",
				});
			}
			// Used now: the row found before the batch, not read again.
			if (found) this.cursors.touch(found, at);
			const page = cutPage(results[0]!.results as PageRow[], plan, claimed, request, at);
			return { page: await this.finish(claimed, request, at, page) };
		});
	}

	private async finish(
		caller: Caller,
		request: ScanRequest,
		at: number,
		page: ReturnType<typeof cutPage>,
	): Promise<string> {
		const next = page.done || !page.last ? null : this.cursors.issue(ownerOf(caller, request), page.last, at);
		if (next?.created) await this.timers.by(TIMER.cursors, caller.account, CursorStore.sweepDue(at));
		return pageJson(next?.id ?? null, page.twins);
	}

	// An API error crosses the RPC boundary as data, with what the work cost in D1.
	private async answer<T>(meter: D1Meter, work: (at: number) => Promise<T>): Promise<Outcome<T>> {
		try {
			return { ok: true, value: await work(now()), cost: meter.snapshot() };
		} catch (error) {
			if (error instanceof ApiError)
				return {
					ok: false,
					code: error.code,
					description: error.message,
					details: error.details,
					cost: meter.snapshot(),
				};
			// Logged here, with the object's stack; the caller answers 500 (or its step retries).
			console.error(JSON.stringify({ object: "account", error: String(error), stack: (error as Error)?.stack }));
			return { ok: false, failure: String(error), cost: meter.snapshot() };
		}
	}

	private docLimits(): docs.DocLimits {
		const env = this.env;
		return {
			uploads: Number(env.MAX_UPLOADS),
			perTwin: accountLimit(env.MAX_TWIN_DOCS, MAX_TWIN_DOCS_CEILING),
			bytes: Number(env.MAX_DOC_BYTES),
		};
	}

	private indexLimits(): indexes.IndexLimits {
		return {
			tables: accountLimit(this.env.MAX_INDEXES_TABLES, MAX_INDEXES_TABLES_CEILING),
			rows: Number(this.env.MAX_INDEX_ROWS),
		};
	}

	private limits(): writes.Limits {
		return {
			roles: accountLimit(this.env.MAX_ROLES, MAX_ROLES_CEILING),
			users: accountLimit(this.env.MAX_USERS, MAX_USERS_CEILING),
		};
	}

	// The one alarm runs every timer that is due (timers.ts).
	async alarm() {
		const legacy = await this.ctx.storage.get<string>(LEGACY_KEYS[0]!);
		if (legacy !== undefined) {
			for (const name of Object.values(TIMER)) await this.timers.by(name, legacy, 0);
			await this.ctx.storage.delete(LEGACY_KEYS);
		}
		await this.timers.run();
	}

	// Drains run one at a time; answers whether messages are left for the alarm.
	private drain(account: string): Promise<boolean> {
		// Every message handed to the queue counts as the account's, whoever's write made it.
		const queued = (messages: number) => this.usage.add(now(), null, { task_publish_topic_count: messages });
		const run = this.draining.then(() =>
			drainOutbox(database(this.env.DB), { queue: this.env.WEBHOOKS, streams: this.env.STREAMS, queued }, account),
		);
		this.draining = run.catch(() => undefined);
		return run.catch((error) => {
			console.error(JSON.stringify({ outbox: account, error: String(error) }));
			return true;
		});
	}

	// Counts an isolate of the Worker buffered for this account (account/usage-client.ts).
	addUsage(rows: UsageRow[]) {
		this.usage.addRows(rows);
	}

	// A usage read: the reading isolate's pending counts first, so the reader sees its own
	// requests, then the hours from `from` to `to` of the user (null: the whole account).
	readUsage(user: string | null, pending: UsageRow[], from: number, to: number, bucket: Bucket) {
		return this.answer(new D1Meter(), async () => {
			this.usage.addRows(pending);
			return bucketed(this.usage.read(user, from, to), bucket);
		});
	}

	// The latest lines of the journal, newest first.
	journal(limit = 100) {
		return this.lines.latest(limit);
	}

	// One ledger write of this account: conditions, checks and the batch, with no other write
	// of the account in between. Its notification messages go to the queue right after the commit.
	writeLedger(write: LedgerWrite) {
		const account = write.writer.account;
		return this.serialized(async (db, meter) => {
			const fanOut = Number(this.env.MAX_SUBSCRIPTIONS);
			const at = now();
			// As the other writes: a role change queued ahead of this write counts here, for the
			// statement, the twin and the entries alike (docs/permission-model.md).
			const writer = await writes.currentCaller(db, write.writer);
			checkStatement(writer, write.action);
			if (!isVisible(writer, write.twin, at)) throw new ApiError("not_found", { description: "No such twin" });
			// A writer that may not see the whole ledger must not see what its rows cost either.
			const indexDb = writer.rules.entry === null ? db : database(this.env.DB);
			const index = (ledger: indexes.LedgerInput) =>
				indexes.indexChanges(indexDb, this.catalog, ledger, at, this.indexLimits());
			const { published, grown, ...value } = await writeLedger(db, { ...write, writer }, at, {
				fanOut,
				beforeCommit: () => this.host.armDrain(account),
				meter,
				index,
			});
			// The account's, not the writer's: ledger bytes are what the account keeps.
			if (grown) this.usage.add(at, null, { ledger_size_delta: grown });
			if (published) await this.drain(account);
			return value;
		});
	}

	private write<T extends { uuid: string } | { user: string }>(
		caller: CallerId,
		action: string,
		work: (db: Database, current: Caller, meter: D1Meter) => Promise<T>,
	): Promise<Outcome<T>> {
		return this.serialized(async (db, meter) => {
			// The Worker checked the statement before the call, but a role change queued ahead of
			// this write may have taken the action away since: it counts here.
			const current = await writes.currentCaller(db, caller);
			checkStatement(current, action);
			const value = await work(db, current, meter);
			this.lines.record(now(), caller.user, action, "uuid" in value ? value.uuid : value.user);
			return value;
		});
	}

	// A D1 round trip does not hold the object's input gate, so mutual exclusion is explicit:
	// each write starts when the previous one has finished, whatever its outcome.
	private serialized<T>(work: (db: Database, meter: D1Meter) => Promise<T>): Promise<Outcome<T>> {
		const run = this.tail.then(() => {
			const meter = new D1Meter();
			return this.answer(meter, () => work(database(meter.wrap(this.env.DB)), meter));
		});
		this.tail = run.catch(() => undefined);
		return run;
	}
}
