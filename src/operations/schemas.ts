import * as z from "zod";
import { ANY_JSON, jsonBytes } from "../base/json";
import { parseRule } from "../rules/parse";
import { STATEMENT_VOCABULARY } from "../policy/vocabulary";

export const DESCRIPTION_KEY = /^[a-z_][0-9a-z_]{0,63}$/;

// A notification topic: what a ledger entry publishes to, and what a subscription and a
// grant name.
export const TOPIC = /^[0-9A-Za-z-]{3,48}$/;
export const topic = z.string().regex(TOPIC, "Must be 3 to 48 letters, digits or '-'");

export const uuid = z.uuid({ version: "v4", error: "Must be a UUID" });

// Any JSON value. z.json() is recursive; the metadata tells the API document to describe it
// as "any JSON value" rather than spell the recursion out (see http/openapi.ts). It is
// registered on the instance itself (.meta() would mark a copy, not the one the recursion
// refers to). Its id names it in the document.
export const jsonValue = z.json().register(z.globalRegistry, { [ANY_JSON]: true, id: "JsonValue" });

// Twin and user descriptions: at most 32 KiB as compact JSON (UTF-8), which bounds what a rule
// and a scan page have to read per twin.
export const MAX_DESCRIPTION_BYTES = 32 * 1024;
export const description = z
	.record(z.string().regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$"), jsonValue)
	.refine(
		(value) => jsonBytes(value) <= MAX_DESCRIPTION_BYTES,
		`Must be at most ${MAX_DESCRIPTION_BYTES} bytes as compact JSON`,
	);

// A statement names each operation at most once (repeats are dropped when it is written).
export const MAX_STATEMENT_ACTIONS = STATEMENT_VOCABULARY.length;

// A timestamp in the API's format; null where the interface allows "never".
export const timestamp = z.number().finite().nonnegative();

// A timestamp in a query string: seconds, with at most 6 decimals. The closing pipe states the
// transform's result, which the API document shows.
export const queryTimestamp = z
	.string()
	.regex(/^\d{1,12}(\.\d{1,6})?$/, "Must be a timestamp: seconds since the Unix epoch")
	.transform(Number)
	.pipe(timestamp);

// A rule is parsed when it is written, so a stored rule always parses.
export const ruleText = z.string().superRefine((text, ctx) => {
	const parsed = parseRule(text);
	if (!parsed.ok) ctx.addIssue({ code: "custom", message: `${parsed.message} at position ${parsed.position}` });
});

// A path segment (or the rest of a path) percent-decoded exactly once, then checked by `inner`:
// an identity's '#' travels as %23, a doc name's '/' as itself or %2F.
export function decodedOnce(inner: z.ZodType<string, string>) {
	return z
		.string()
		.transform((text, ctx) => {
			try {
				return decodeURIComponent(text);
			} catch {
				ctx.addIssue({ code: "custom", message: "Invalid percent-encoding" });
				return z.NEVER;
			}
		})
		.pipe(inner);
}

// A boolean in a query string: true, false, 1 or 0, in any case. The closing pipe states what
// the transform gives, which is how the API document types the parameter.
export const queryBoolean = z
	.string()
	.regex(/^(true|false|1|0)$/i, "Must be true, false, 1 or 0")
	.transform((v) => /^(true|1)$/i.test(v))
	.pipe(z.boolean());

// Output shapes. Every answer is passed through its operation's response schema, which
// drops anything the schema does not name, so a stored column (a hash, a token) cannot leak.
// The records a client meets in many answers carry ids, which name them in the API document
// and so in a generated client.
export const uuidOut = z.string().meta({ format: "uuid" });
export const timestampOut = z.number().meta({ description: "Seconds since the Unix epoch, three decimals" });
// An object in an answer keyed by uuid or name (get_users, a ledger's entries) of at most `max`
// members. The bound is stated in the API document (maxProperties) and checked on every answer,
// so a list that could outgrow its page fails here instead of reaching a client, and
// test/node/bounded-answers.test.ts fails when a list in an answer states no bound.
export function mapOf<T extends z.ZodType>(item: T, max: number) {
	return z
		.record(z.string(), item)
		.refine((map) => Object.keys(map).length <= max, `At most ${max} members`)
		.meta({ maxProperties: max });
}

// Each member of a compact JSON object takes at least 6 bytes (`"a":0,`).
export const descriptionOut = mapOf(jsonValue, Math.floor(MAX_DESCRIPTION_BYTES / 6));

export const userRecord = z.object({
	uuid: uuidOut,
	account: uuidOut,
	name: z.string(),
	role: uuidOut,
	description: descriptionOut,
	activity: z.strictObject({}).nullable(),
	created_ts: timestampOut,
	updated_ts: timestampOut,
}).meta({ id: "User" });

// The original's activity logging setting (of users) and resource access log (of the
// account) route logs into Timeseries tables, which this service does not have: only "none"
// (null, or the empty object) is accepted.
export const unsupportedSetting = z.union([z.null(), z.strictObject({}, { error: "Only null or {} are supported" })], {
	error: "Only null or {} are supported",
});

export const secretRecord = z.object({
	fingerprint: z.string().meta({ description: "The last 4 characters of the secret" }),
	account: uuidOut,
	user: uuidOut,
	validity_ts: timestampOut.nullable(),
	created_ts: timestampOut,
	updated_ts: timestampOut,
}).meta({ id: "UserSecret" });

export const roleRecord = z.object({
	uuid: uuidOut,
	name: z.string(),
	account: uuidOut,
	rules: z.object({ twin: z.string().nullable(), entry: z.string().nullable(), identity: z.string().nullable() }),
	statement: z.object({ effect: z.enum(["allow", "deny"]), actions: z.array(z.string()).max(MAX_STATEMENT_ACTIONS).nullable() }),
	created_ts: timestampOut,
	updated_ts: timestampOut,
}).meta({ id: "Role" });

export const twinRecord = z.object({
	uuid: uuidOut,
	owner: uuidOut,
	status: z.enum(["alive", "terminated"]),
	updated_ts: timestampOut,
	description: descriptionOut,
	creation_certificate: z.object({ uuid: uuidOut, creator: uuidOut, created_ts: timestampOut }),
	termination_certificate: z.object({ issuer: uuidOut, terminated_ts: timestampOut }).nullable(),
}).meta({ id: "Twin" });

export const subscriptionOut = z.object({
	uuid: uuidOut,
	topic: z.string(),
	account: uuidOut,
	status: z.enum(["pending", "confirmed", "unsubscribed", "expired", "failed"]),
	validity_ts: timestampOut,
}).meta({ id: "Subscription" });

