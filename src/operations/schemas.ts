import * as z from "zod";
import { ANY_JSON, jsonBytes } from "../base/json";
import { parseRule } from "../rules/parse";

export const DESCRIPTION_KEY = /^[a-z_][0-9a-z_]{0,63}$/;

export const uuid = z.uuid({ version: "v4", error: "Must be a UUID" });

// Any JSON value. z.json() is recursive; the metadata tells the API document to describe it
// as "any JSON value" rather than spell the recursion out (see http/openapi.ts). It is
// registered on the instance itself (.meta() would mark a copy, not the one the recursion
// refers to).
export const jsonValue = z.json().register(z.globalRegistry, { [ANY_JSON]: true });

// Twin and user descriptions: at most 32 KiB as compact JSON (UTF-8), which bounds what a rule
// and a scan page have to read per twin.
export const MAX_DESCRIPTION_BYTES = 32 * 1024;
export const description = z
	.record(z.string().regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$"), jsonValue)
	.refine(
		(value) => jsonBytes(value) <= MAX_DESCRIPTION_BYTES,
		`Must be at most ${MAX_DESCRIPTION_BYTES} bytes as compact JSON`,
	);

// A timestamp in the API's format; null where the interface allows "never".
export const timestamp = z.number().finite().nonnegative();

// A rule is parsed when it is written, so a stored rule always parses.
export const ruleText = z.string().superRefine((text, ctx) => {
	const parsed = parseRule(text);
	if (!parsed.ok) ctx.addIssue({ code: "custom", message: `${parsed.message} at position ${parsed.position}` });
});

// A boolean in a query string: true, false, 1 or 0, in any case.
export const queryBoolean = z
	.string()
	.regex(/^(true|false|1|0)$/i, "Must be true, false, 1 or 0")
	.transform((v) => /^(true|1)$/i.test(v));

// Output shapes. Every answer is passed through its operation's response schema, which
// drops anything the schema does not name, so a stored column (a hash, a token) cannot leak.
export const uuidOut = z.string().meta({ format: "uuid" });
export const timestampOut = z.number().meta({ description: "Seconds since the Unix epoch, three decimals" });
export const descriptionOut = z.record(z.string(), jsonValue);

export const userRecord = z.object({
	uuid: uuidOut,
	account: uuidOut,
	name: z.string(),
	role: uuidOut,
	description: descriptionOut,
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

export const secretRecord = z.object({
	fingerprint: z.string().meta({ description: "The last 4 characters of the secret" }),
	account: uuidOut,
	user: uuidOut,
	validity_ts: timestampOut.nullable(),
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

export const roleRecord = z.object({
	uuid: uuidOut,
	name: z.string(),
	account: uuidOut,
	rules: z.object({ twin: z.string().nullable(), entry: z.string().nullable(), identity: z.string().nullable() }),
	statement: z.object({ effect: z.enum(["allow", "deny"]), actions: z.array(z.string()).nullable() }),
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

export const twinRecord = z.object({
	uuid: uuidOut,
	owner: uuidOut,
	status: z.enum(["alive", "terminated"]),
	updated_ts: timestampOut,
	description: descriptionOut,
	creation_certificate: z.record(z.string(), jsonValue),
	termination_certificate: z.record(z.string(), jsonValue).nullable(),
});

export const subscriptionOut = z.object({
	uuid: uuidOut,
	topic: z.string(),
	account: uuidOut,
	status: z.enum(["pending", "confirmed", "unsubscribed", "expired", "failed"]),
	validity_ts: timestampOut,
});

// A map keyed by uuid, as get_users and get_user_roles answer.
export const byUuid = <T extends z.ZodType>(item: T) => z.record(z.string(), item);
