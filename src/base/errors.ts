// One error envelope for every failure. `subcode` is status * 1000 + n; this catalogue is the
// single source of them; docs/errors.md mirrors it and a test keeps the two equal.

export const ERRORS = {
	validation: { status: 400, subcode: 400101, description: "The request is invalid" },
	malformed_json: { status: 400, subcode: 400102, description: "The request body is not valid JSON" },
	twin_terminated: { status: 400, subcode: 400103, description: "The twin is terminated" },
	invalid_cursor: { status: 400, subcode: 400104, description: "The cursor is invalid or expired" },
	subscription_expired: { status: 400, subcode: 400105, description: "The subscription has expired" },
	ledger_too_large: { status: 400, subcode: 400106, description: "The ledger would exceed 64 KiB" },
	hash_mismatch: {
		status: 400,
		subcode: 400171,
		description: "A hash differs from the upload's SHA-256; nothing was attached",
	},
	bucket_too_large: {
		status: 400,
		subcode: 400221,
		description: "A bucket of the query holds more than count stored rows of the tier read",
	},
	missing_credential: { status: 401, subcode: 401101, description: "No credential was given" },
	unknown_credential: { status: 401, subcode: 401102, description: "The credential is not valid" },
	expired_credential: { status: 401, subcode: 401103, description: "The credential has expired" },
	// Signing in with an identity provider's ID token (exchange_user_token, docs/sign-in.md).
	untrusted_token: {
		status: 401,
		subcode: 401261,
		description: "No identity provider of the named account accepts the token",
	},
	unverifiable_token: {
		status: 401,
		subcode: 401262,
		description:
			"Not a signed JWT this service verifies (a compact JWS with alg RS256, ES256 or EdDSA, no crit, an iss)",
	},
	id_token_expired: {
		status: 401,
		subcode: 401263,
		description: "The ID token has expired, or the token it would give ends by now",
	},
	id_token_early: { status: 401, subcode: 401264, description: "The ID token is not valid yet" },
	id_token_subject: {
		status: 401,
		subcode: 401265,
		description: "The ID token names no usable subject, or its mapped DICT is over 2 KiB",
	},
	subject_not_linked: {
		status: 401,
		subcode: 401266,
		description: "No user of the account is linked to this subject, and the provider provisions none",
	},
	operation_forbidden: { status: 403, subcode: 403101, description: "The role does not allow this operation" },
	escalation: {
		status: 403,
		subcode: 403102,
		description: "The role would allow actions the caller is not allowed",
	},
	not_owner: { status: 403, subcode: 403103, description: "Only the owner's account may do this" },
	topic_not_granted: {
		status: 403,
		subcode: 403104,
		description: "The topic is not granted to the caller's account",
	},
	credential_forbidden: {
		status: 403,
		subcode: 403105,
		description:
			"The credential cannot do this: a User Token without the option, a secret on refresh, or a token issuing a PIN",
	},
	route_not_found: { status: 404, subcode: 404101, description: "No such route" },
	not_found: { status: 404, subcode: 404102, description: "No such resource" },
	pin_not_found: { status: 404, subcode: 404103, description: "No such PIN" },
	upload_not_found: {
		status: 404,
		subcode: 404171,
		description: "No such upload handler, upload URL or download URL",
	},
	method_not_allowed: { status: 405, subcode: 405101, description: "Method not allowed on this path" },
	conflict: { status: 409, subcode: 409101, description: "The request conflicts with the resource's state" },
	condition_failed: { status: 409, subcode: 409102, description: "A condition of the request is false" },
	role_limit: { status: 409, subcode: 409103, description: "The account has reached its limit of roles (MAX_ROLES)" },
	user_limit: { status: 409, subcode: 409104, description: "The account has reached its limit of users (MAX_USERS)" },
	subscription_limit: {
		status: 409,
		subcode: 409105,
		description: "The account has reached its limit of live webhook subscriptions (MAX_SUBSCRIPTIONS)",
	},
	subscription_failed: {
		status: 409,
		subcode: 409106,
		description: "The subscription failed; its owner can resend the confirmation",
	},
	idempotency_in_flight: {
		status: 409,
		subcode: 409107,
		description: "A request with the same Idempotency-Key is still being processed; retry later",
	},
	grantee_limit: {
		status: 409,
		subcode: 409108,
		description: "The account has reached its limit of accounts it grants topics to (MAX_GRANTEES)",
	},
	twin_limit: { status: 409, subcode: 409109, description: "The account has reached its limit of twins (MAX_TWINS)" },
	upload_empty: { status: 409, subcode: 409171, description: "The upload URL has received no file yet" },
	upload_used: { status: 409, subcode: 409172, description: "The upload URL already holds its file" },
	upload_in_progress: { status: 409, subcode: 409176, description: "An upload to this URL is in progress" },
	doc_bytes_limit: {
		status: 409,
		subcode: 409173,
		description: "The account's doc bytes, attached and uploaded, would exceed its limit (MAX_DOC_BYTES)",
	},
	upload_limit: {
		status: 409,
		subcode: 409174,
		description: "The account holds its limit of live upload URLs (MAX_UPLOADS)",
	},
	twin_doc_limit: {
		status: 409,
		subcode: 409175,
		description: "The twin holds its limit of the account's docs (MAX_TWIN_DOCS)",
	},
	stream_limit: {
		status: 409,
		subcode: 409191,
		description: "The caller's account has its limit of open streams on this publishing account (MAX_STREAMS)",
	},
	sticker_limit: {
		status: 409,
		subcode: 409201,
		description: "The account holds its limit of unexpired stickers (MAX_STICKERS)",
	},
	idempotency_quota: {
		status: 409,
		subcode: 409211,
		description: "The account keeps its limit of answers to Idempotency-Key requests; nothing was done",
	},
	active_jobs_limit: {
		status: 409,
		subcode: 409231,
		description: "The account has its limit of batches and exports not yet ended (MAX_ACTIVE_BATCHES)",
	},
	job_state: {
		status: 409,
		subcode: 409232,
		description: "The job's state forbids it: only a running job is cancelled, only an ended one deleted",
	},
	jobs_limit: {
		status: 409,
		subcode: 409233,
		description: "The account keeps its limit of batches and exports (MAX_BATCHES)",
	},
	identity_provider_limit: {
		status: 409,
		subcode: 409261,
		description: "The account has reached its limit of identity providers (MAX_IDENTITY_PROVIDERS)",
	},
	length_required: { status: 411, subcode: 411171, description: "An upload needs a Content-Length header" },
	precondition_failed: {
		status: 412,
		subcode: 412251,
		description: "If-Match matched no current ETag of the twin; nothing was written",
	},
	body_too_large: { status: 413, subcode: 413101, description: "The request body is larger than 64 KiB" },
	upload_too_large: {
		status: 413,
		subcode: 413171,
		description: "The file is larger than an upload may be (MAX_UPLOAD_BYTES)",
	},
	unsupported_patch_format: {
		status: 415,
		subcode: 415251,
		description:
			"The body is in a patch format this route does not read (it reads application/json and application/merge-patch+json)",
	},
	range_unsatisfiable: { status: 416, subcode: 416171, description: "The range cannot be satisfied" },
	idempotency_mismatch: {
		status: 422,
		subcode: 422101,
		description: "The Idempotency-Key was used with another request (method, path, content type, If-Match or body)",
	},
	rate_limited: {
		status: 429,
		subcode: 429101,
		description: "Too many attempts from this address; try again in a minute",
	},
	internal: { status: 500, subcode: 500101, description: "Internal error" },
	webhooks_unconfigured: {
		status: 500,
		subcode: 500102,
		description: "Webhooks or file URLs are not configured on this server (PUBLIC_URL, WEBHOOK_KEY)",
	},
	tokens_unconfigured: {
		status: 500,
		subcode: 500103,
		description: "User Tokens are not configured on this server (TOKEN_KEY)",
	},
	shards_invalid: {
		status: 500,
		subcode: 500241,
		description:
			"SHARDS is invalid (a bucket unmapped or mapped twice, or an undeclared binding); nothing was read or written",
	},
	timeseries_pending: {
		status: 503,
		subcode: 503221,
		description: "consistent=true: the account's pending points were not delivered within 5 s; retry",
	},
	bucket_moving: {
		status: 503,
		subcode: 503241,
		description: "The account's data is moving between databases; nothing was written; retry after Retry-After seconds",
	},
	provider_keys_unreachable: {
		status: 503,
		subcode: 503261,
		description: "The identity provider's keys could not be fetched; retry in 30 seconds",
	},
} as const satisfies Record<string, { status: number; subcode: number; description: string }>;

export type ErrorCode = keyof typeof ERRORS;
export type ErrorDetail = { path: string; message: string };

// What an error may carry besides its code: a description other than the catalogue's, one
// detail per failing field, and headers the answer must bear (a challenge, a retry delay).
export type ErrorOptions = {
	description?: string;
	details?: ErrorDetail[];
	headers?: Record<string, string>;
};

// Thrown anywhere (handlers, the account's object, rules) and turned into the one envelope
// by the HTTP layer.
export class ApiError extends Error {
	readonly status: number;
	readonly subcode: number;
	readonly details?: ErrorDetail[];
	readonly headers?: Record<string, string>;

	constructor(
		readonly code: ErrorCode,
		options: ErrorOptions = {},
	) {
		super(options.description ?? ERRORS[code].description);
		this.status = ERRORS[code].status;
		this.subcode = ERRORS[code].subcode;
		this.details = options.details;
		this.headers = options.headers;
	}
}
