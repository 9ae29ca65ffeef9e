import type { BatchItem } from "drizzle-orm/batch";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { type Database, database } from "../db/client";
import { type LineMark, lineMarks } from "../db/jobs";
import { readLedger } from "../db/ledgers";
import { D1Meter } from "../db/meter";
import { homeDatabase, homeOf, MOVE_RETRY_SECONDS } from "../db/shards";
import {
	credentialOfFact,
	type FactKey,
	factId,
	factStatement,
	guardStatement,
	twinOfFact,
	userOfFact,
} from "../db/write-facts";
import { checkCredential, checkStatement, sameCaller } from "../policy/credential";
import { isVisible } from "../rules/visibility";
import type { IndexCatalog, IndexLimits, LedgerInput } from "./index-tables";
import { indexChanges } from "./index-tables";
import { LedgerFacts } from "./ledger-facts";
import type { StoredEntry } from "./ledger-view";
import { type LedgerPlan, type LedgerWrite, ledgerOf, planLedgerWrite } from "./ledger-writes";
import type { Outcome } from "./outcome";
import type { TimeseriesFeed } from "./timeseries-feed";

// The ledger writes of one account, in groups (docs/design.md, "One round trip per write").
// Writes that arrive while the object is busy wait together; the next step takes them all (at
// most MAX_GROUP), reads in one batch whatever facts they need that the object does not keep
// (ledger-facts.ts), checks each in arrival order against the ledgers the earlier ones leave,
// and commits the writes that hold in one D1 batch, which starts with a guard per fact relied
// on. Each write gets its own answer and its own Server-Timing.
//
// - A refusal decided on a kept fact is decided again alone, on facts read for it: a refusal
//   always rests on what D1 holds, and a refused write changes nothing for the others.
// - A batch that fails (a guard found a fact changed, or D1 failed) writes nothing: the object
//   forgets every fact and runs the group's writes again one by one, each on facts read for it.
//   A write that fails alone on such facts answers the failure.
// - An account with Indexes tables writes one ledger per batch: a write's index rows are
//   planned on the rows D1 holds (index-tables.ts), which an earlier write of the same group
//   would not have written yet.

export const MAX_GROUP = 32;
// A group's batch stops taking writes past this many statements; the writes left wait for the
// next step. A batch is one D1 call, but each of its statements is a query D1 limits and runs.
export const MAX_GROUP_STATEMENTS = 400;

// A write as the Worker sends it: the twin by uuid (the object reads it) and the ledger as the
// path names it. `writer` is the caller the Worker checked, or (`guessed`) the isolate's guess
// of the caller of the secret `hash`: the object checks the secret itself, and answers `stale`
// when it no longer stands for that caller. `mark`: the write is a batch line, whose mark
// commits among the write's own statements.
type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type LedgerRequest = Without<LedgerWrite, "twin"> & {
	twin: string;
	ledger: string;
	hash?: string;
	guessed?: true;
	mark?: LineMark;
};

export type LedgerAnswer = { stale: true } | { stale?: undefined; entries: LedgerPlan["value"]["entries"] };

// What the groups borrow from the account's object.
export type LedgerHost = {
	account: () => string;
	env: () => Env;
	serialized: (work: () => Promise<null>) => Promise<unknown>;
	answer: <T>(meter: D1Meter, work: () => Promise<T>) => Promise<Outcome<T>>;
	catalog: IndexCatalog;
	indexLimits: () => IndexLimits;
	// Before a batch with notification messages commits, and after it has.
	armDrain: () => Promise<void>;
	drain: () => Promise<unknown>;
	grown: (at: number, bytes: number) => void;
	// The points of Timeseries tables (timeseries-feed.ts); the drain's timer is armed before a
	// batch with points commits, so a crash after the commit leaves none behind for good.
	timeseries: TimeseriesFeed;
	armTimeseries: () => Promise<void>;
};

type Pending = {
	request: LedgerRequest;
	meter: D1Meter;
	resolve: (outcome: Promise<Outcome<LedgerAnswer>>) => void;
	settled?: true;
};

type Keys = { writer: FactKey; twin: FactKey & { kind: "twin" }; ledger: FactKey & { kind: "ledger" } };
type Planned = { pending: Pending; plan: LedgerPlan; keys: Keys; at: number };

export class LedgerGroups {
	readonly facts = new LedgerFacts();
	private waiting: Pending[] = [];
	private scheduled = false;
	private last = 0;

	constructor(private readonly host: LedgerHost) {}

	write(request: LedgerRequest): Promise<Outcome<LedgerAnswer>> {
		return new Promise((resolve) => {
			this.waiting.push({ request, meter: new D1Meter(), resolve });
			this.schedule();
		});
	}

	// One step of the object's serialized writes takes every write waiting when it starts.
	private schedule() {
		if (this.scheduled) return;
		this.scheduled = true;
		void this.host.serialized(async () => {
			this.scheduled = false;
			const group = this.waiting.splice(0, MAX_GROUP);
			if (this.waiting.length) this.schedule();
			try {
				await this.run(group, false);
			} catch (error) {
				for (const pending of group) this.settle(pending, { error });
			}
			return null;
		});
	}

	private settle(pending: Pending, result: { value: LedgerAnswer } | { error: unknown }) {
		if (pending.settled) return;
		pending.settled = true;
		pending.resolve(
			this.host.answer(pending.meter, async () => {
				if ("error" in result) throw result.error;
				return result.value;
			}),
		);
	}

	// `alone`: the group is one write run again, on facts read for it.
	private async run(group: Pending[], alone: boolean): Promise<void> {
		const env = this.host.env();
		const account = this.host.account();
		const binding = homeOf(env, account);
		const home = homeDatabase(env, account);
		const raw = database(home);
		if (group.length > 1 && (await this.host.catalog.all(account)).length > 0) {
			for (const pending of group) await this.run([pending], false);
			return;
		}
		const facts = this.facts;
		const keysOf = (request: LedgerRequest): Keys => ({
			writer: request.hash
				? { kind: "secret", hash: request.hash }
				: { kind: "user", account: request.writer.account, user: request.writer.user },
			twin: { kind: "twin", uuid: request.twin },
			ledger: { kind: "ledger", twin: request.twin, account },
		});
		// A twin is read where its owner's rows are: in another database, apart, and not kept.
		const isHome = (key: FactKey) => key.kind !== "twin" || homeOf(env, key.uuid) === binding;
		const dbOf = (key: FactKey) =>
			key.kind === "twin" && !isHome(key)
				? { db: database(homeDatabase(env, key.uuid)), home: false }
				: { db: raw, home: true };
		facts.begin();
		const keys = group.map((pending) => keysOf(pending.request));
		if (alone) facts.drop(keys.flatMap((k) => [k.writer, k.twin, k.ledger]));
		await facts.read(
			keys.flatMap((k) => [k.writer, k.twin, k.ledger]),
			dbOf,
		);

		const ledgers = new Map<string, Map<string, StoredEntry>>();
		const planned: Planned[] = [];
		const again: Pending[] = [];
		const later: Pending[] = [];
		let statements = 0;
		for (const [i, pending] of group.entries()) {
			if (statements >= MAX_GROUP_STATEMENTS) {
				later.push(pending);
				continue;
			}
			const k = keys[i]!;
			const fresh = [k.writer, k.twin, k.ledger].every((key) => facts.fresh(key));
			const at = this.stamp();
			try {
				const plan = await this.plan(pending, k, ledgers, at, raw, binding);
				if (plan === "stale" && !fresh && !alone) again.push(pending);
				else if (plan === "stale") this.settle(pending, { value: { stale: true } });
				else {
					planned.push({ pending, plan, keys: k, at });
					statements += plan.statements.length;
				}
			} catch (error) {
				if (error instanceof ApiError && !fresh && !alone) again.push(pending);
				else this.settle(pending, { error });
			}
		}
		if (planned.length) await this.commit(planned, group, again, raw, binding, alone);
		facts.end(isHome);
		// First in line for the next step, as they came.
		if (later.length) {
			this.waiting.unshift(...later);
			this.schedule();
		}
		// Run again alone, it answers with what that run cost: what its first try read for the
		// group is not its own, and would make its answer depend on what the object kept.
		for (const pending of group.filter((p) => again.includes(p))) {
			pending.meter = new D1Meter();
			await this.run([pending], true);
		}
	}

	// One write checked as the Worker would check it, on the facts: the writer (its credential),
	// its permission, the twin, the ledger; then planned on the ledger the group has left.
	private async plan(
		pending: Pending,
		keys: Keys,
		ledgers: Map<string, Map<string, StoredEntry>>,
		at: number,
		raw: Database,
		binding: string,
	): Promise<LedgerPlan | "stale"> {
		const { request, meter } = pending;
		const facts = this.facts;
		// A fact read for this step costs the write what the Worker's read of it would: one
		// query, and the rows it sees (a hidden twin or entry is not counted, see D1Meter.sighted).
		if ([keys.writer, keys.twin, keys.ledger].some((key) => facts.fresh(key))) meter.add({ calls: 1 });
		const charge = (key: FactKey, rows: number) => {
			if (facts.fresh(key)) meter.add({ queries: 1, rowsRead: rows });
		};
		const writer = this.writer(request, keys.writer, at, charge);
		if (writer === "stale") return writer;
		checkStatement(writer, request.action);
		const twin = twinOfFact(facts.get(keys.twin)?.value ?? null);
		const visible = twin !== undefined && isVisible(writer, twin, at);
		charge(keys.twin, visible ? 1 : 0);
		if (!twin || !visible) throw new ApiError("not_found", { description: "No such twin" });
		if (request.ledger !== "personal" && request.ledger !== writer.account)
			throw new ApiError("not_owner", { description: "Only the caller's own ledger may be written" });

		const id = factId(keys.ledger);
		const current = ledgers.get(id) ?? ledgerOf(facts.get(keys.ledger)?.rows ?? []);
		const when = this.past(current, at);
		const db = database(meter.wrap(homeDatabase(this.host.env(), writer.account), binding));
		// A writer that may not see the whole ledger must not see what its rows cost either.
		const indexDb = writer.rules.entry === null ? db : raw;
		const { hash: _, guessed: __, ledger: ___, mark, ...rest } = request;
		const write = { ...rest, twin, writer } as LedgerWrite;
		const plan = await planLedgerWrite(db, write, current, when, {
			fanOut: Number(this.host.env().MAX_SUBSCRIPTIONS),
			read: (seen: number) => charge(keys.ledger, seen),
			index: (ledger: LedgerInput) => indexChanges(indexDb, this.host.catalog, ledger, when, this.host.indexLimits()),
			timeseries: {
				check: (entries) => this.host.timeseries.check(writer.account, entries),
				plan: (input) => this.host.timeseries.plan(raw, input),
			},
		});
		ledgers.set(id, plan.after);
		// Each write of a group carries its own mark (a write that changes nothing commits its mark
		// alone): a second run of a line fails the group's batch on its mark, and alone it answers
		// that failure, having written nothing.
		plan.statements.push(...lineMarks(db, mark, at));
		return plan;
	}

	// The writer as its fact has it now: a secret's caller (401 when gone or expired, `stale`
	// when a guess no longer matches, 503241 while its account's bucket moves), or a user's.
	private writer(
		request: LedgerRequest,
		key: FactKey,
		at: number,
		charge: (key: FactKey, rows: number) => void,
	): Caller | "stale" {
		const fact = this.facts.get(key)?.value ?? null;
		const { dict, credential } = request.writer;
		if (key.kind === "secret") {
			const found = credentialOfFact(fact);
			charge(key, found ? 1 : 0);
			const principal = checkCredential(found, at);
			if (request.guessed && !sameCaller(principal, request.writer)) return "stale";
			if (principal.moving)
				throw new ApiError("bucket_moving", { headers: { "retry-after": String(MOVE_RETRY_SECONDS) } });
			return { ...principal, dict, credential };
		}
		const found = userOfFact(fact);
		charge(key, found ? 1 : 0);
		if (!found) throw new ApiError("unknown_credential");
		return { account: request.writer.account, user: request.writer.user, ...found, dict, credential };
	}

	// The planned writes in one batch: the guards of the kept facts they rest on, their
	// statements in order, then each written ledger's fact and rows read back for the next group.
	private async commit(
		planned: Planned[],
		group: Pending[],
		again: Pending[],
		raw: Database,
		binding: string,
		alone: boolean,
	) {
		const facts = this.facts;
		const unique = (list: FactKey[]) => [...new Map(list.map((key) => [factId(key), key])).values()];
		const relied = unique(planned.flatMap(({ keys }) => [keys.writer, keys.twin, keys.ledger])).filter(
			(key) => key.kind !== "twin" || facts.get(key) !== undefined,
		);
		const guards = relied.flatMap((key) => {
			const fact = facts.get(key);
			// A twin of another database is read for the step only: nothing here can guard it.
			return fact && (key.kind !== "twin" || this.keepsTwin(key, binding))
				? [guardStatement(raw, key, fact.value)]
				: [];
		});
		const written = unique(
			planned.filter(({ plan }) => plan.statements.length).map(({ keys }) => keys.ledger),
		) as Keys["ledger"][];
		const readBack = written.flatMap((key): BatchItem<"sqlite">[] => [
			factStatement(raw, key),
			readLedger(raw, key.twin, key.account),
		]);
		const statements = planned.flatMap(({ plan }) => plan.statements);
		const published = planned.some(({ plan }) => plan.published);
		if (statements.length === 0) {
			for (const { pending, plan } of planned) this.settle(pending, { value: plan.value });
			return;
		}
		if (published) await this.host.armDrain();
		const points = planned.flatMap(({ plan }) => plan.points);
		const feeds = planned.some(({ plan }) => plan.feeds);
		if (feeds) await this.host.armTimeseries();
		let results: unknown[];
		try {
			// Each statement counts for the request whose meter prepared it (D1Meter.wrap).
			const batch = database(new D1Meter().wrap(homeDatabase(this.host.env(), this.host.account()), binding));
			results = await batch.batch([...guards, ...statements, ...readBack] as [
				BatchItem<"sqlite">,
				...BatchItem<"sqlite">[],
			]);
		} catch (error) {
			// A write alone on facts read for it has nothing left to try: it answers the failure.
			const final =
				alone ||
				(group.length === 1 &&
					planned.every(({ keys }) => [keys.writer, keys.twin, keys.ledger].every((key) => facts.fresh(key))));
			facts.forget();
			this.host.catalog.forget();
			if (final) for (const { pending } of planned) this.settle(pending, { error });
			else again.push(...planned.map(({ pending }) => pending));
			return;
		}
		let i = guards.length + statements.length;
		for (const key of written) {
			const [row] = results[i++] as { fact: string | null }[];
			facts.put(key, row?.fact ?? null, results[i++] as Parameters<LedgerFacts["put"]>[2]);
		}
		for (const { plan, at } of planned) {
			plan.committed();
			if (plan.grown) this.host.grown(at, plan.grown);
		}
		if (published) await this.host.drain();
		// The points reach their chunk objects before the writes answer, when they can; the
		// timer's drain delivers what is left.
		if (points.length) await this.host.timeseries.deliver(points);
		for (const { pending, plan } of planned) this.settle(pending, { value: plan.value });
	}

	// Each write's time, a millisecond past the one before at least: the writes of one group
	// (the clock stands still between them) change an entry at distinct times, and each value
	// keeps its own history record.
	private stamp(): number {
		this.last = Math.max(now(), Math.round(this.last * 1000 + 1) / 1000);
		return this.last;
	}

	// `at`, or a millisecond past the latest time the ledger holds if that is later: a restarted
	// object stamps from the clock again, which may stand behind its last stamps, and a value must
	// still follow the one it replaces in time (its history record sorts after it).
	private past(ledger: Map<string, StoredEntry>, at: number): number {
		let latest = 0;
		for (const entry of ledger.values()) latest = Math.max(latest, entry.value_changed_ts, entry.entry_updated_ts);
		if (at > latest) return at;
		this.last = Math.max(this.last, Math.round(latest * 1000 + 1) / 1000);
		return this.last;
	}

	private keepsTwin(key: FactKey & { kind: "twin" }, binding: string) {
		return homeOf(this.host.env(), key.uuid) === binding;
	}
}
