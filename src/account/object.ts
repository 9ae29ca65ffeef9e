import {
	accountLimit,
	MAX_INDEXES_TABLES_CEILING,
	MAX_ROLES_CEILING,
	MAX_TIMESERIES_TABLES_CEILING,
	MAX_USERS_CEILING,
} from "../base/limits";
import { type Database, database } from "../db/client";
import { D1Meter } from "../db/meter";
import { ApiError } from "../base/errors";
import type { Caller, Claim } from "../base/caller";
import { now } from "../base/time";
import { bindingOf, CursorStore } from "./cursors";
import { Journal } from "./journal";
import { type LedgerRequest, LedgerGroups } from "./ledger-groups";
import { drainOutbox, drainRetryAt, homesIn } from "../notifications/outbox-drain";
import { Timers } from "./timers";
import { DIRECTORY_GRACE_SECONDS, directoryStep, drainDirectory } from "./directory";
import { type CallerId, type Host, TIMER } from "./host";
import { docFacet } from "./facets/docs";
import { federationFacet } from "./facets/federation";
import { identityFacet } from "./facets/identities";
import { indexFacet } from "./facets/indexes";
import { timeseriesFacet } from "./facets/timeseries";
import { jobFacet } from "./facets/jobs";
import type { JobLimits } from "./job-writes";
import { TimeseriesCatalog, type TimeseriesLimits } from "./timeseries-tables";
import { TimeseriesFeed } from "./timeseries-feed";
import { timeseriesStep } from "./timeseries-work";
import { stickerFacet } from "./facets/stickers";
import { shardsOf, subscriptionFacet } from "./facets/subscriptions";
import { type Outcome, settled } from "./outcome";
import { credentialOf, credentialStatement, type CredentialRow } from "../db/auth";
import { type PageRow, twinPageStatement } from "../db/twins";
import { checkCredential, checkStatement, sameCaller } from "../policy/credential";
import { decide } from "../policy/statement";
import { cutPage, pageJson, planPage, type ScanRequest } from "./scan";
import * as secrets from "./secret-writes";
import * as writes from "./role-user-writes";
import * as docs from "./doc-writes";
import * as indexes from "./index-tables";
import { revokeStreams, type StreamChange } from "../notifications/streams/client";
import { CLOSE } from "../notifications/streams/frames";
import * as stickers from "./sticker-writes";
import { UsageStore } from "./usage-store";
import { type Bucket, bucketed, type UsageRow } from "../base/usage";
import { homeDatabase, homeOf } from "../db/shards";
import { isMoving } from "../db/moves";
import { bucketOfId } from "../base/shards";

// A batch with timeseries points arms the drain this much later: the write's own step
// delivers them before that, and the drain then only clears the outbox.
const TIMESERIES_GRACE_SECONDS = 2;
// Rounds of the drain a consistent query may wait for (the Worker stops waiting at 5 s).
const TIMESERIES_CONSISTENT_ROUNDS = 20;

// How long background work waits while the account's bucket moves.
const MOVE_WAIT_MS = 5000;

// Objects from before the schedule (timers.ts) kept their account under this key, and the
// earliest sticker expiry under the other: their first alarm runs every step once.
const LEGACY_KEYS = ["outbox-account", "sticker-due"];
// Set once the object has applied the directory outbox rows of identities from before it.
const DIRECTORY_FILLED = "directory-filled";

export type ScanAnswer = { stale: true } | { stale?: undefined; page: string };

const ownerOf = (caller: Caller, request: ScanRequest) => ({
	user: caller.user,
	binding: bindingOf(request.match, request.details),
});

// The methods of the features that live in their own modules (facets/): the object takes them
// on as its own in its constructor, so the runtime and the RPC stubs find them on it.
export interface AccountObject
	extends ReturnType<typeof identityFacet>,
		ReturnType<typeof docFacet>,
		ReturnType<typeof stickerFacet>,
		ReturnType<typeof indexFacet>,
		ReturnType<typeof timeseriesFacet>,
		ReturnType<typeof jobFacet>,
		ReturnType<typeof federationFacet>,
		ReturnType<typeof subscriptionFacet> {}

// One object per account, addressed by the account uuid. Writes to roles, users and their
// credentials, identities, ledgers, docs, stickers, Indexes tables and identity providers run
// here one at a time, each with the checks that guard it; all but ledger writes leave a line in
// the object's journal. Scan cursors are issued and kept here too. The class holds the step
// every write runs in, the scan, the ledger write, the drain and the schedule (timers.ts); the
// other features' methods live in facets/, on the Host it lends them.
export class AccountObject {
	private tail: Promise<unknown> = Promise.resolve();
	private draining: Promise<unknown> = Promise.resolve();
	private readonly cursors: CursorStore;
	private readonly lines: Journal;
	private readonly catalog: indexes.IndexCatalog;
	// The account's Timeseries tables, and the points its ledger writes make for them.
	private readonly timeseries: TimeseriesCatalog;
	private readonly feed: TimeseriesFeed;
	// The account's usage by hour (docs/usage.md): the Worker's counts arrive by addUsage, the object's
	// own (ledger bytes, published messages, stickers) are added where they happen.
	private readonly usage: UsageStore;
	// Every kind of background work, each a timer with its step (timers.ts).
	private readonly timers: Timers;
	// What the features' background steps borrow from the object (host.ts).
	private readonly host: Host;
	private directoryFilled = false;
	// The account's ledger writes, and what the object keeps for them (ledger-groups.ts).
	private readonly ledgers: LedgerGroups;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {
		this.cursors = new CursorStore(ctx.storage.sql);
		this.lines = new Journal(ctx.storage.sql);
		this.usage = new UsageStore(ctx.storage.sql);
		this.catalog = new indexes.IndexCatalog(() => database(this.home()));
		this.timeseries = new TimeseriesCatalog(() => database(this.home()));
		this.feed = new TimeseriesFeed(ctx.storage.sql, this.timeseries, () => this.env);
		this.timers = new Timers(ctx.storage, {
			[TIMER.outbox]: async (account) => ((await this.drain(account)) ? drainRetryAt(now()) : undefined),
			[TIMER.cursors]: async () => this.cursors.sweepStep(now()),
			[TIMER.docs]: (account) => docs.tidyStep(this.host, account),
			[TIMER.indexes]: (account) => indexes.indexStep(this.host, this.catalog, account, this.indexLimits()),
			[TIMER.stickers]: (account) => stickers.expiryStep(this.host, account),
			[TIMER.stickerCopies]: (account) => stickers.copiesStep(this.host, account),
			[TIMER.directory]: (account) => directoryStep(this.host, account),
			[TIMER.timeseries]: (account) => timeseriesStep(this.host, this.feed, this.timeseries, account),
		});
		const object = this;
		const host: Host = {
			// Read at each use: the object's env is the one it runs with now.
			get env() {
				return object.env;
			},
			home: () => this.home(),
			storage: ctx.storage,
			timers: this.timers,
			usage: this.usage,
			serialized: (work) => this.serialized(work),
			write: (caller, action, work) => this.write(caller, action, work),
			tellStreams: (write, change) => this.tellStreams(write, change),
			record: (actor, action, target) => this.lines.record(now(), actor, action, target),
			drain: (account) => this.drain(account),
			armDrain: (account) => this.timers.by(TIMER.outbox, account, drainRetryAt(now())),
		};
		this.host = host;
		this.ledgers = new LedgerGroups({
			account: () => this.account(),
			env: () => this.env,
			serialized: (work) => this.serialized(() => work()),
			answer: (meter, work) => this.answer(meter, () => work()),
			catalog: this.catalog,
			indexLimits: () => this.indexLimits(),
			armDrain: () => host.armDrain(this.account()),
			drain: () => this.drain(this.account()),
			grown: (at, bytes) => this.usage.add(at, null, { ledger_size_delta: bytes }),
			timeseries: this.feed,
			armTimeseries: () => this.timers.by(TIMER.timeseries, this.account(), now() + TIMESERIES_GRACE_SECONDS),
		});
		// The features' methods, on the object as its own (see the interface above the class).
		Object.assign(
			this,
			identityFacet(host),
			docFacet(host),
			stickerFacet(host),
			indexFacet(host, this.catalog, () => this.indexLimits()),
			timeseriesFacet(
				host,
				this.timeseries,
				() => this.timeseriesLimits(),
				(account) => this.deliverPoints(account),
			),
			federationFacet(host, () => this.limits().users),
			jobFacet(host, () => this.jobLimits()),
			subscriptionFacet(host),
		);
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
			const now = await writes.currentCaller(database(this.home()), { account: caller.account, user });
			if (!decide(now.statement, "stream_notifications").allowed)
				return { account: caller.account, user, code: CLOSE.permissionEnded };
			const { role, statement, rules, description } = now;
			return { account: caller.account, user, reader: { role, statement, rules, description } };
		});
	}

	// A confined user's subscriptions to other accounts' topics are in their databases: ended
	// there first (see writes.deleteUser).
	deleteUser(caller: CallerId, user: string) {
		const elsewhere = (meter: D1Meter) =>
			shardsOf(this.env, meter).filter(({ binding }) => binding !== homeOf(this.env, caller.account));
		const write = this.write(caller, "delete_user", (db, current, meter) =>
			writes.deleteUser(db, current, user, elsewhere(meter)),
		);
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

	// The account this object is named by (its uuid), and the database holding its rows
	// (docs/scaling.md): the object never moves, its rows may.
	private account(): string {
		const name = this.ctx.id.name;
		if (name === undefined) throw new Error("The account's object was reached without its name");
		return name;
	}

	private home(): D1Database {
		return homeDatabase(this.env, this.account());
	}

	// The database holding a caller's user and role: the step's own when it is the account's.
	private callerDatabase(account: string, db: Database, meter: D1Meter): Database {
		const binding = homeOf(this.env, account);
		if (binding === homeOf(this.env, this.account())) return db;
		return database(meter.wrap(homeDatabase(this.env, account), binding));
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
				this.home().withSession(hash === undefined ? (bookmark ?? "first-primary") : "first-primary"),
				homeOf(this.env, this.account()),
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
	private answer<T>(meter: D1Meter, work: (at: number) => Promise<T>): Promise<Outcome<T>> {
		return settled(meter, "account", () => work(now()));
	}

	private indexLimits(): indexes.IndexLimits {
		return {
			tables: accountLimit(this.env.MAX_INDEXES_TABLES, MAX_INDEXES_TABLES_CEILING),
			rows: Number(this.env.MAX_INDEX_ROWS),
		};
	}

	private timeseriesLimits(): TimeseriesLimits {
		return {
			tables: accountLimit(this.env.MAX_TIMESERIES_TABLES, MAX_TIMESERIES_TABLES_CEILING),
			chunkBytes: Number(this.env.MAX_TIMESERIES_CHUNK_BYTES),
		};
	}

	// Every pending point of the account to its chunk object, for a query that reads its writes
	// (consistent=true): rounds of the drain until none is left. Answers whether that happened.
	private async deliverPoints(account: string): Promise<boolean> {
		const db = database(this.home());
		for (let round = 0; round < TIMESERIES_CONSISTENT_ROUNDS; round++) {
			if (!(await this.feed.drain(db, account))) return true;
		}
		return false;
	}

	private jobLimits(): JobLimits {
		return {
			active: Number(this.env.MAX_ACTIVE_BATCHES),
			kept: Number(this.env.MAX_BATCHES),
			retentionSeconds: Number(this.env.BATCH_RETENTION_SECONDS),
		};
	}

	private limits(): writes.Limits {
		return {
			roles: accountLimit(this.env.MAX_ROLES, MAX_ROLES_CEILING),
			users: accountLimit(this.env.MAX_USERS, MAX_USERS_CEILING),
		};
	}

	// The one alarm runs every timer that is due (timers.ts), unless the account's bucket is
	// moving between databases: its background writes wait for the move as its requests do
	// (docs/scaling.md, "Moving a bucket").
	async alarm() {
		const bucket = bucketOfId(this.account());
		if (bucket !== undefined && (await isMoving(this.home(), bucket))) {
			await this.ctx.storage.setAlarm(Date.now() + MOVE_WAIT_MS);
			return;
		}
		const legacy = await this.ctx.storage.get<string>(LEGACY_KEYS[0]!);
		if (legacy !== undefined) {
			for (const name of Object.values(TIMER)) await this.timers.by(name, legacy, now());
			await this.ctx.storage.delete(LEGACY_KEYS);
		}
		await this.timers.run();
	}

	// Drains run one at a time; answers whether messages are left for the alarm.
	private drain(account: string): Promise<boolean> {
		// Every message handed to the queue counts as the account's, whoever's write made it.
		const queued = (messages: number) => this.usage.add(now(), null, { task_publish_topic_count: messages });
		const run = this.draining.then(() =>
			drainOutbox(
				database(this.home()),
				{ queue: this.env.WEBHOOKS, streams: this.env.STREAMS, homes: homesIn(this.env), queued },
				account,
			),
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

	// One ledger write of this account, grouped with the writes that wait beside it
	// (ledger-groups.ts): checked against the state the earlier ones leave, committed with them
	// in one D1 batch. Its notification messages go to the queue right after the commit.
	writeLedger(request: LedgerRequest) {
		return this.ledgers.write(request);
	}

	private write<T extends { uuid: string } | { user: string }>(
		caller: CallerId,
		action: string,
		work: (db: Database, current: Caller, meter: D1Meter) => Promise<T>,
	): Promise<Outcome<T>> {
		return this.serialized(async (db, meter) => {
			// The Worker checked the statement before the call, but a role change queued ahead of
			// this write may have taken the action away since: it counts here. The caller's user and
			// role are in its own account's database, which is another one for a recipient removing
			// another account's sticker (docs/stickers.md "Across databases").
			const current = await writes.currentCaller(this.callerDatabase(caller.account, db, meter), caller);
			checkStatement(current, action);
			const value = await work(db, current, meter);
			this.lines.record(now(), caller.user, action, "uuid" in value ? value.uuid : value.user);
			// A ledger write's writer rests on roles, users and their secrets: after a write to
			// them, the object reads its writers again rather than fail a batch on a guard.
			if (/role|user/.test(action)) this.ledgers.facts.forgetWriters();
			return value;
		});
	}

	// Public identities from before the directory wait in the account's outbox (the migration that
	// made it put them there): the object's first step ever (a write, a ledger's included, or a
	// timer's) applies them, or leaves the rest to the directory's timer. Every later step finds
	// the mark and reads nothing.
	private async fillDirectory(): Promise<void> {
		if (!this.directoryFilled) this.directoryFilled = (await this.ctx.storage.get(DIRECTORY_FILLED)) === true;
		if (this.directoryFilled) return;
		const account = this.account();
		if (await drainDirectory(this.env, account))
			await this.timers.by(TIMER.directory, account, now() + DIRECTORY_GRACE_SECONDS);
		await this.ctx.storage.put(DIRECTORY_FILLED, true);
		this.directoryFilled = true;
	}

	// A D1 round trip does not hold the object's input gate, so mutual exclusion is explicit:
	// each write starts when the previous one has finished, whatever its outcome.
	private serialized<T>(work: (db: Database, meter: D1Meter) => Promise<T>): Promise<Outcome<T>> {
		const run = this.tail.then(() => {
			const meter = new D1Meter();
			return this.answer(meter, async () => {
				await this.fillDirectory();
				return work(database(meter.wrap(this.home(), homeOf(this.env, this.account()))), meter);
			});
		});
		this.tail = run.catch(() => undefined);
		return run;
	}
}
