import * as z from "zod/mini";
import { ANY_JSON, jsonBytes } from "../base/json";
import { parseRule } from "../rules/parse";
import { STATEMENT_VOCABULARY } from "../policy/vocabulary";
import { DESCRIPTION_TOO_LARGE, MAX_DESCRIPTION_BYTES } from "../base/limits";

// A copy of `schema` carrying `metadata` for the API document (what zod's classic `.meta()`
// does): the copy inherits the original's metadata but not its id, so a shape named once is
// named once, however many schemas are later built on it.
export function withMeta<T extends z.ZodMiniType>(schema: T, metadata: z.core.GlobalMeta): T {
	const copy = schema.clone();
	z.globalRegistry.add(copy, metadata);
	return copy;
}

export const DESCRIPTION_KEY = /^[a-z_][0-9a-z_]{0,63}$/;

// A notification topic: what a ledger entry publishes to, and what a subscription and a
// grant name.
export const TOPIC = /^[0-9A-Za-z-]{3,48}$/;
export const topic = z.string().check(z.regex(TOPIC, "Must be 3 to 48 letters, digits or '-'"));

// Version 4 (an account from before sharding and its rows) or version 8 (one made since, whose
// first octet is its bucket: docs/scaling.md).
export const uuid = withMeta(
	z
		.string()
		.check(
			z.regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[48][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i, { error: "Must be a UUID" }),
		),
	{ format: "uuid" },
);

// Any JSON value. z.json() is recursive; the metadata tells the API document to describe it
// as "any JSON value" rather than spell the recursion out (see http/openapi.ts). It is
// registered on the instance itself (.meta() would mark a copy, not the one the recursion
// refers to). Its id names it in the document.
export const jsonValue = z.json().register(z.globalRegistry, { [ANY_JSON]: true, id: "JsonValue" });

// Twin and user descriptions (base/limits.ts bounds their size). A merge patch of one (RFC
// 7396) has the same keys, and a null member removes one; its size is checked once merged.
const describedKeys = z.record(
	z.string().check(z.regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$")),
	jsonValue,
);
export const description = describedKeys.check(
	z.refine((value) => jsonBytes(value) <= MAX_DESCRIPTION_BYTES, DESCRIPTION_TOO_LARGE),
);
// A batch's or export's description: the same keys, at most 4 KiB.
export const MAX_JOB_DESCRIPTION_BYTES = 4096;
export const jobDescription = describedKeys.check(
	z.refine((value) => jsonBytes(value) <= MAX_JOB_DESCRIPTION_BYTES, "At most 4 KiB as compact JSON"),
);
export const descriptionPatch = withMeta(describedKeys, {
	description: "A merge patch of the description (RFC 7396): null removes a key",
});

// A statement names each operation at most once (repeats are dropped when it is written).
export const MAX_STATEMENT_ACTIONS = STATEMENT_VOCABULARY.length;

// A timestamp in the API's format; null where the interface allows "never".
export const timestamp = z.number().check(z.nonnegative());

// A timestamp in a query string: seconds, with at most 6 decimals. The closing pipe states the
// transform's result, which the API document shows.
export const queryTimestamp = z.pipe(
	z.pipe(
		z.string().check(z.regex(/^\d{1,12}(\.\d{1,6})?$/, "Must be a timestamp: seconds since the Unix epoch")),
		z.transform(Number),
	),
	timestamp,
);

// A rule is parsed when it is written, so a stored rule always parses.
export const ruleText = z.string().check(
	z.superRefine((text, ctx) => {
		const parsed = parseRule(text);
		if (!parsed.ok) ctx.addIssue({ code: "custom", message: `${parsed.message} at position ${parsed.position}` });
	}),
);

// A path segment (or the rest of a path) percent-decoded exactly once, then checked by `inner`:
// an identity's '#' travels as %23, a doc name's '/' as itself or %2F.
export function decodedOnce(inner: z.ZodMiniType<string, string>) {
	const decoded = z.transform((text: string, ctx) => {
		try {
			return decodeURIComponent(text);
		} catch {
			ctx.issues.push({ code: "custom", message: "Invalid percent-encoding", input: text });
			return z.NEVER;
		}
	});
	return z.pipe(z.pipe(z.string(), decoded), inner);
}

// A list in a query string (`entries`, `topics`, a `context` of accounts): one comma-separated
// value, repeats dropped, 1 to `max` items. The closing array is what the API document shows.
export function commaList(item: z.ZodMiniType<string, string>, max: number, noun: string) {
	return z.pipe(
		z.pipe(
			z.string(),
			z.transform((text: string) => [...new Set(text.split(","))]),
		),
		z.array(item).check(z.minLength(1), z.maxLength(max, `At most ${max} ${noun}`)),
	);
}

// A boolean in a query string: true, false, 1 or 0, in any case. The closing pipe states what
// the transform gives, which is how the API document types the parameter.
export const queryBoolean = z.pipe(
	z.pipe(
		z.string().check(z.regex(/^(true|false|1|0)$/i, "Must be true, false, 1 or 0")),
		z.transform((v: string) => /^(true|1)$/i.test(v)),
	),
	z.boolean(),
);

// Output shapes. Every answer is passed through its operation's response schema, which
// drops anything the schema does not name, so a stored column (a hash, a token) cannot leak.
// The records a client meets in many answers carry ids, which name them in the API document
// and so in a generated client.
export const uuidOut = withMeta(z.string(), { format: "uuid" });
export const timestampOut = withMeta(z.number(), { description: "Seconds since the Unix epoch, three decimals" });
// An object in an answer keyed by uuid or name (get_users, a ledger's entries) of at most `max`
// members. The bound is stated in the API document (maxProperties) and checked on every answer,
// so a list that could outgrow its page fails here instead of reaching a client, and
// test/node/bounded-answers.test.ts fails when a list in an answer states no bound.
export function mapOf<T extends z.ZodMiniType>(item: T, max: number) {
	const bounded = z
		.record(z.string(), item)
		.check(z.refine((map) => Object.keys(map).length <= max, `At most ${max} members`));
	return withMeta(bounded, { maxProperties: max });
}

// Each member of a compact JSON object takes at least 6 bytes (`"a":0,`).
export const descriptionOut = mapOf(jsonValue, Math.floor(MAX_DESCRIPTION_BYTES / 6));

export const userRecord = withMeta(
	z.object({
		uuid: uuidOut,
		account: uuidOut,
		name: z.string(),
		role: uuidOut,
		description: descriptionOut,
		activity: z.nullable(z.strictObject({})),
		created_ts: timestampOut,
		updated_ts: timestampOut,
	}),
	{ id: "User" },
);

// The original's activity logging setting (of users) and resource access log (of the
// account) route logs into Timeseries tables, which this service does not have: only "none"
// (null, or the empty object) is accepted.
export const unsupportedSetting = z.union([z.null(), z.strictObject({}, { error: "Only null or {} are supported" })], {
	error: "Only null or {} are supported",
});

export const secretRecord = withMeta(
	z.object({
		fingerprint: withMeta(z.string(), { description: "The last 4 characters of the secret" }),
		account: uuidOut,
		user: uuidOut,
		validity_ts: z.nullable(timestampOut),
		created_ts: timestampOut,
		updated_ts: timestampOut,
	}),
	{ id: "UserSecret" },
);

export const roleRecord = withMeta(
	z.object({
		uuid: uuidOut,
		name: z.string(),
		account: uuidOut,
		rules: z.object({ twin: z.nullable(z.string()), entry: z.nullable(z.string()), identity: z.nullable(z.string()) }),
		statement: z.object({
			effect: z.enum(["allow", "deny"]),
			actions: z.nullable(z.array(z.string()).check(z.maxLength(MAX_STATEMENT_ACTIONS))),
		}),
		created_ts: timestampOut,
		updated_ts: timestampOut,
	}),
	{ id: "Role" },
);

export const twinRecord = withMeta(
	z.object({
		uuid: uuidOut,
		owner: uuidOut,
		status: z.enum(["alive", "terminated"]),
		updated_ts: timestampOut,
		description: descriptionOut,
		creation_certificate: z.object({ uuid: uuidOut, creator: uuidOut, created_ts: timestampOut }),
		termination_certificate: z.nullable(z.object({ issuer: uuidOut, terminated_ts: timestampOut })),
	}),
	{ id: "Twin" },
);

export const subscriptionOut = withMeta(
	z.object({
		uuid: uuidOut,
		topic: z.string(),
		account: uuidOut,
		status: z.enum(["pending", "confirmed", "unsubscribed", "expired", "failed"]),
		validity_ts: timestampOut,
	}),
	{ id: "Subscription" },
);
