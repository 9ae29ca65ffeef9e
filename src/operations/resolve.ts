import * as z from "zod";
import { type ResolvedRow, resolveIdentity } from "../db/identities";
import { canSeeIdentity, isExpired } from "../rules/identities";
import { isVisible } from "../rules/visibility";
import { Budget, WORK_UNITS } from "../rules/strings";
import { now } from "../base/time";
import { identityParam } from "./identities";
import { defineOperation } from "./operation";
import { queryBoolean, twinRecord, uuid, uuidOut } from "./schemas";

// At most this many attachments are examined, and so at most this many twins answered.
const MAX_RESOLVED = 1000;
const MAX_CONTEXT_ACCOUNTS = 10;

// `personal` (the caller's account), `system` (every account), or 1 to 10 account uuids.
const context = z.union([
	z.enum(["personal", "system"]),
	z
		.string()
		.transform((text) => [...new Set(text.split(","))])
		.pipe(z.array(uuid).min(1).max(MAX_CONTEXT_ACCOUNTS, `At most ${MAX_CONTEXT_ACCOUNTS} accounts`)),
]);

function twinOf(row: ResolvedRow) {
	return {
		uuid: row.twin,
		owner: row.owner,
		status: row.status,
		updated_ts: row.twin_updated_ts,
		description: JSON.parse(row.description),
		creation_certificate: JSON.parse(row.creation_certificate),
		termination_certificate: row.termination_certificate ? JSON.parse(row.termination_certificate) : null,
	};
}

export const resolveTwinIdentity = defineOperation({
	name: "resolve_twin_identity",
	summary: "The twins an identity is attached to, by the context's accounts, as far as the caller may see the identity",
	auth: "secret",
	params: z.strictObject({ identity: identityParam }),
	query: z.strictObject({ context: context.optional().default("personal"), details: queryBoolean.optional().default(false) }),
	response: z.object({ twins: z.array(z.union([uuidOut, twinRecord])) }),
	async run({ params, query }, ctx) {
		const reader = ctx.caller;
		const me = reader.account;
		const accounts = query.context === "personal" ? [me] : query.context === "system" ? null : query.context;
		const own = accounts === null || accounts.includes(me) ? me : null;
		// A role without an identity rule sees no other account's identity: none is read.
		const others = accounts?.filter((account) => account !== me) ?? null;
		const foreign = reader.rules.identity !== null && others?.length !== 0 ? { only: others } : null;

		const at = now();
		// Every rule this request evaluates, over up to MAX_RESOLVED rows, shares one budget.
		const budget = new Budget(WORK_UNITS);
		const before = ctx.meter.snapshot();
		const rows = await resolveIdentity(ctx.db, params.identity, own, foreign, MAX_RESOLVED);
		const sees = (row: ResolvedRow) =>
			!isExpired(row, at) && (row.part === "own" || row.account !== me) && canSeeIdentity(reader, row, twinOf(row), at, budget);
		// Each part reads one range of an identity index, or one per account when accounts are listed.
		const range = (row: ResolvedRow) => (row.part === "foreign" && foreign?.only ? row.account : row.part);
		const twins = new Map<string, ReturnType<typeof twinOf>>();
		const visible = ctx.meter.concealRows(before, rows, sees, { perRow: 2, range });
		for (const row of visible.sort((x, y) => (x.twin < y.twin ? -1 : x.twin > y.twin ? 1 : 0))) {
			if (!twins.has(row.twin)) twins.set(row.twin, twinOf(row));
		}
		// Without details every twin is named, even one the caller cannot see; with details
		// only the visible ones, as scan_twins shows them.
		if (!query.details) return { twins: [...twins.keys()] };
		return { twins: [...twins.values()].filter((twin) => isVisible(ctx.caller, twin, at, budget)) };
	},
});
