import * as z from "zod/mini";
import { TOKEN_OPTIONS } from "../policy/token";
import { defineOperation } from "./operation";
import { jsonValue, mapOf, timestampOut, uuidOut } from "./schemas";

// What the service saw of this request: who called, with which credential, the dictionary
// rules read as DICT, and the steps the request went through. The caller sees it, and the
// log gets the same as one JSON line, under the request's id.
export const trace = defineOperation({
	name: "trace",
	summary: "What the service saw of this request: caller, credential, DICT and the steps so far",
	description:
		"Echoes what the service saw of this request (caller, credential, the X-TrustedTwin dictionary and the steps taken) and writes the same to the log under the request's id.",
	auth: "secret",
	status: 201,
	response: z.object({
		trace: z.string(),
		account: uuidOut,
		user: uuidOut,
		role: uuidOut,
		credential: z.object({
			type: z.enum(["secret", "token"]),
			// The secret's last four characters: the issuer's for a token issued for the user,
			// none for a token an exchange gave.
			fingerprint: z.nullable(z.string()),
			validity_ts: z.nullable(timestampOut),
			options: z.optional(z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(TOKEN_OPTIONS.length))),
			// Who issued a token for the user (issue_user_token).
			actor: z.optional(uuidOut),
			// The identity provider and subject a token's exchange signed in with.
			provider: z.optional(uuidOut),
			subject: z.optional(z.string()),
		}),
		// At most 4096 characters of header (or 2 KiB of secret_dict), 6 bytes a member at least.
		dict: z.nullable(mapOf(jsonValue, Math.floor(4096 / 6))),
		stages: z.array(z.object({ name: z.string(), ms: z.number() })).check(z.maxLength(16)),
	}),
	async run(_input, { caller, request }) {
		const credential = caller.credential!;
		const token = credential.token;
		// A token stops working at its expiry or its secret's, whichever comes first.
		const ends = [token?.exp, credential.validity_ts].filter((ts): ts is number => typeof ts === "number");
		const [received, ...steps] = request.stages;
		const start = received?.at ?? Date.now();
		const answer = {
			trace: request.id,
			account: caller.account,
			user: caller.user,
			role: caller.role,
			credential: {
				type: credential.type,
				fingerprint: credential.fingerprint,
				validity_ts: ends.length ? Math.min(...ends) : null,
				...(token ? { options: token.options } : {}),
				...(credential.binding.kind === "issued" ? { actor: credential.binding.actor } : {}),
				...(credential.binding.kind === "federated"
					? { provider: credential.binding.provider, subject: credential.binding.subject }
					: {}),
			},
			dict: caller.dict ?? null,
			stages: [...steps, { name: "handler", at: Date.now() }].map((stage) => ({
				name: stage.name,
				ms: stage.at - start,
			})),
		};
		console.log(JSON.stringify({ event: "trace", ...answer }));
		return answer;
	},
});
