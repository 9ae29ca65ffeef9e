import type { Description, RoleRules, Statement } from "../base/caller";
import type { Json, Rule } from "../rules/ast";
import { deepEqual } from "../rules/equal";
import { step } from "../rules/evaluate";
import { parseStoredRule } from "../rules/stored";
import type { Caller } from "../base/caller";
import { checkGrant } from "./statement";

// What a caller may hand to anyone (a role, a user, a PIN), decided with no I/O. A request
// passes only when it leaves nobody able to do or see more than the caller: the callers of
// these functions turn a refusal into 403102.

export type Role = { uuid: string; statement: Statement; rules: RoleRules };
export type Target = { uuid: string; role: Role; description: Description };
export type RuleKind = keyof RoleRules;

export type Refusal =
	| { reason: "actions"; actions: string[] }
	| { reason: "rule"; kind: RuleKind }
	| { reason: "inputs"; inputs: string[] };
export type Verdict = { ok: true } | ({ ok: false } & Refusal);

const KINDS: RuleKind[] = ["twin", "entry", "identity"];
const OK: Verdict = { ok: true };

// undefined for a rule that does not parse (stored rules do; the language may tighten).
function tree(text: string | null): Rule | null | undefined {
	if (text === null) return null;
	const parsed = parseStoredRule(text);
	return parsed.ok ? parsed.rule : undefined;
}

// The account's administrator may do everything and sees its account without any rule: it
// could give itself any rule, so it may give any rule to others.
export function isAdministrator(caller: Pick<Caller, "statement" | "rules">): boolean {
	const { effect, actions } = caller.statement;
	return (
		effect === "deny" && (actions === null || actions.length === 0) && KINDS.every((k) => caller.rules[k] === null)
	);
}

const OWN_ACCOUNT: Rule[] = [
	{
		kind: "compare",
		op: "==",
		left: { kind: "var", root: "owner", path: [] },
		right: { kind: "var", root: "account", path: [] },
	},
	{
		kind: "compare",
		op: "==",
		left: { kind: "var", root: "account", path: [] },
		right: { kind: "var", root: "owner", path: [] },
	},
];

// Containment of arbitrary rules is not decided: a granted rule passes when it is the caller's
// own rule, or narrows it with a top-level `and` whose left operand is exactly that rule.
// Without a rule, a caller sees its own account's items. For twins `owner == account` says
// the same; for entries and identities no rule does (`owner` is the twin's owner, and an
// entry or identity rule also admits other accounts' public items on such a twin), so there
// only null is within null.
function ruleWithin(kind: RuleKind, granted: Rule | null | undefined, own: Rule | null | undefined): boolean {
	if (granted === undefined || own === undefined) return false;
	if (own === null) {
		if (granted === null) return true;
		if (kind !== "twin") return false;
		const base = granted.kind === "logical" && granted.op === "and" ? granted.left : granted;
		return OWN_ACCOUNT.some((form) => sameTree(form, base));
	}
	if (granted === null) return false;
	if (sameTree(granted, own)) return true;
	return granted.kind === "logical" && granted.op === "and" && sameTree(granted.left, own);
}

// Whether the caller may create a role like this, or give one like it to a user.
export function checkRoleGrant(
	caller: Caller,
	role: Omit<Role, "uuid"> & { uuid?: string },
	vocabulary: readonly string[],
): Verdict {
	const actions = checkGrant(caller.statement, role.statement, vocabulary);
	if (!actions.ok) return { ok: false, reason: "actions", actions: actions.actions };
	if (isAdministrator(caller)) return OK;
	for (const kind of KINDS) {
		if (!ruleWithin(kind, tree(role.rules[kind]), tree(caller.rules[kind]))) return { ok: false, reason: "rule", kind };
	}
	// `role` in the caller's rule reads the holder's role: under another role it sees otherwise.
	if (role.uuid !== caller.role && readsOf(caller.rules).has("role"))
		return { ok: false, reason: "inputs", inputs: ["role"] };
	return OK;
}

// The inputs a role's rules take from the user who holds it: `USER.<path>` keys of its
// description, and the `user` and `role` variables.
function readsOf(rules: RoleRules): Map<string, (string | number)[] | null> {
	const reads = new Map<string, (string | number)[] | null>();
	const visit = (rule: Rule): void => {
		switch (rule.kind) {
			case "var":
				if (rule.root === "USER")
					reads.set(`USER${rule.path.map((p) => `[${JSON.stringify(p)}]`).join("")}`, rule.path);
				else if (rule.root === "user" || rule.root === "role") reads.set(rule.root, null);
				return;
			case "list":
				for (const item of rule.items) visit(item);
				return;
			case "not":
				visit(rule.arg);
				return;
			case "logical":
			case "compare":
				visit(rule.left);
				visit(rule.right);
				return;
		}
	};
	for (const kind of KINDS) {
		const rule = tree(rules[kind]);
		if (rule) visit(rule);
	}
	return reads;
}

// Other accounts' public entries and identities reach a reader whose role has an entry or
// identity rule when their own visibility rules hold, and those rules, written by the other
// account, may read any USER path: for such a role the whole description is an input.
function seesForeignItems(rules: RoleRules): boolean {
	return rules.entry !== null || rules.identity !== null;
}

export function readsUser(rules: RoleRules): boolean {
	return [...readsOf(rules).keys()].some((name) => name.startsWith("USER"));
}

// Whether the caller may manage this user (change it, delete it, issue it a PIN, touch its
// secret): the caller could grant the user's role, and the user's inputs to the caller's own
// rules are the caller's, so the user sees nothing the caller does not. Every rule of a
// grantable role is the caller's rule, alone or narrowed by `and`: inputs read only by the
// narrowing part can only hide more, so they may differ.
export function checkManageable(caller: Caller, target: Target, vocabulary: readonly string[]): Verdict {
	const role = checkRoleGrant(caller, target.role, vocabulary);
	if (!role.ok || isAdministrator(caller)) return role;
	const differing: string[] = [];
	for (const [name, path] of readsOf(caller.rules)) {
		if (name === "user" ? target.uuid !== caller.user : name === "role" ? target.role.uuid !== caller.role : false) {
			differing.push(name);
		} else if (path !== null && !deepEqual(valueAt(target.description, path), valueAt(caller.description, path))) {
			differing.push(name);
		}
	}
	if (seesForeignItems(caller.rules) && !deepEqual(target.description as Json, caller.description as Json)) {
		differing.push("USER (other accounts' visibility rules may read any of it)");
	}
	return differing.length ? { ok: false, reason: "inputs", inputs: differing } : OK;
}

// Notifications carry entry values and twin uuids whatever their visibility (publishing and
// granting a topic are the owner's consent for its subscribers), so a role confined by a twin
// or entry rule may not subscribe, nor grant the account's topics to another account: its own
// messages, or the other account's, would show what its rules hide.
export function maySubscribe(caller: Pick<Caller, "rules">): boolean {
	return caller.rules.twin === null && caller.rules.entry === null;
}

// A visibility rule is evaluated for the readers of other accounts, and a publish rule with the
// sight of whoever writes the entry next, for the subscribers of its topic: both over every
// entry of the ledger. One that reads LEDGER would tell them about entries its writer may not
// see, so only a writer that sees every entry of its account's ledgers (a role without an entry
// rule) may write one. Conditions read only what their writer sees and answer only to it.
export function mayReadLedgerInRules(writer: Pick<Caller, "rules">): boolean {
	return writer.rules.entry === null;
}

// USER variables decide what a user sees: only the administrator, or a user whose description
// no rule reads (its role's rules, or other accounts' visibility rules), may set its own.
export function mayChangeOwnDescription(caller: Caller): boolean {
	return isAdministrator(caller) || (!readsUser(caller.rules) && !seesForeignItems(caller.rules));
}

const sameTree = (a: Rule, b: Rule) => deepEqual(a as unknown as Json, b as unknown as Json);

function valueAt(description: Description, path: (string | number)[]): Json {
	return path.reduce<Json>(step, description as Json);
}

export function describeRefusal(refusal: Refusal, what: string): string {
	switch (refusal.reason) {
		case "actions":
			return `${what} allows actions the caller may not perform: ${refusal.actions.join(", ")}`;
		case "rule":
			return `${what}'s ${refusal.kind} rule is not the caller's own rule or a narrowing of it with 'and'`;
		case "inputs":
			return `${what}'s rules would read ${refusal.inputs.join(", ")} differently than for the caller`;
	}
}
