// A typed client of the Twin Registry: the types are generated from the service's API document
// (schema.d.ts, by openapi-typescript), the requests are openapi-fetch's. This file adds what
// a generated client cannot know: the credential on every request (a string, or a function such
// as userTokenCredential's that refreshes a User Token), lists in a query as one comma-separated
// value (as the document states), answers unwrapped with every refusal thrown as a
// TwinRegistryError, retries under an Idempotency-Key, the cursors of scan_twins and
// query_timeseries_table walked as async iterators, live streams, the upload-then-attach of
// docs, and batches and exports: a batch's lines uploaded as NDJSON with their SHA-256, a job
// followed to the status it ends in, and a batch's results read line by line.
import createFetchClient, { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import { TwinRegistryError } from "./error.js";
import { retryingFetch, type Fetch, type RetryOptions } from "./retry.js";
import type { components, operations, paths } from "./schema.js";
import { openStream, type NotificationStream, type StreamOptions } from "./stream.js";
import {
	BATCH_ENDS,
	EXPORT_ENDS,
	follow,
	ndjson,
	ndjsonLines,
	type Batch,
	type BatchInput,
	type BatchResult,
	type Export,
	type ExportInput,
	type FollowOptions,
} from "./jobs.js";
import { bytesOf, sha256Hex, type DocUpload } from "./upload.js";

export type { components, operations, paths };
export { ERRORS, SUBCODES, TwinRegistryError, type ErrorCode, type ErrorDetail, type ErrorEnvelope } from "./error.js";
export { retryAfterMs, retryingFetch, type Fetch, type RetryOptions } from "./retry.js";
export {
	StreamClosedError,
	type NotificationStream,
	type StreamEvent,
	type StreamMessage,
	type StreamOptions,
	type WebSocketConstructor,
	type WebSocketLike,
} from "./stream.js";
export {
	exchangeToken,
	userTokenCredential,
	type ExchangedToken,
	type TokenExchange,
	type UserToken,
	type UserTokenCredential,
	type UserTokenOptions,
} from "./token.js";
export { sha256Hex, type DocUpload } from "./upload.js";
export type { Batch, BatchInput, BatchLine, BatchResult, Export, ExportInput, FollowOptions } from "./jobs.js";

export type Twin = components["schemas"]["Twin"];
export type User = components["schemas"]["User"];
export type Role = components["schemas"]["Role"];
export type UserSecret = components["schemas"]["UserSecret"];
export type Subscription = components["schemas"]["Subscription"];

type Method = "get" | "post" | "patch" | "put" | "delete";
type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends undefined ? never : P }[keyof paths];
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
// The request options are optional exactly when the operation requires no parameter and no body.
type Args<I> = undefined extends I ? [init?: I & Record<string, unknown>] : [init: I & Record<string, unknown>];
type Data<P extends keyof paths, M extends Method, I> = NonNullable<
	// biome-ignore lint/suspicious/noExplicitAny: openapi-fetch's FetchResponse takes the operation with an index signature of any.
	FetchResponse<paths[P][M] & Record<string | number, any>, I, "application/json">["data"]
>;
type Call<M extends Method> = <P extends PathsWith<M>, I extends Init<P, M>>(
	path: P,
	...init: Args<I>
) => Promise<Data<P, M, I>>;

export type ClientOptions = {
	// The service's origin, such as "https://registry.example.com".
	baseUrl: string;
	// A User Secret or a User Token, or a function answering one for each request (such as
	// userTokenCredential's); the bootstrap route takes "Bearer <ADMIN_TOKEN>".
	credential?: string | (() => string | Promise<string>);
	// Another fetch (a test's, or a proxy's); the global one by default.
	fetch?: Fetch;
	headers?: Record<string, string>;
	// Retry failed requests, POST and PATCH under one Idempotency-Key per call (off by default;
	// true for the defaults of RetryOptions).
	retry?: boolean | RetryOptions;
};

export type ScanQuery = NonNullable<operations["scan_twins"]["parameters"]["query"]>;
export type TimeseriesQuery = operations["query_timeseries_table"]["parameters"]["query"];
// A page of query_timeseries_table: its cursor, the tier that answered, the columns and the rows.
export type TimeseriesPage = operations["query_timeseries_table"]["responses"][200]["content"]["application/json"];
// A doc's record, as attach_twin_doc and get_twin_doc answer it.
export type Doc = operations["attach_twin_doc"]["responses"][201]["content"]["application/json"]["docs"][string];

export type TwinRegistryClient = {
	get: Call<"get">;
	post: Call<"post">;
	patch: Call<"patch">;
	put: Call<"put">;
	delete: Call<"delete">;
	// Every twin scan_twins answers, page after page: uuids, or records with details: true.
	scanTwins(query?: Omit<ScanQuery, "cursor" | "details"> & { details?: false }): AsyncIterable<string>;
	scanTwins(query: Omit<ScanQuery, "cursor" | "details"> & { details: true }): AsyncIterable<Twin>;
	// Every page query_timeseries_table answers for one query of a table, page after page (each
	// with its columns and resolution); a page may hold no rows while more follow.
	queryTimeseries(timeseries: string, query: Omit<TimeseriesQuery, "cursor">): AsyncIterable<TimeseriesPage>;
	// A live stream of notification messages, resumed after each disconnection.
	stream(options: StreamOptions): NotificationStream;
	// Uploads bytes and attaches them to a twin under a name, with their SHA-256; answers the
	// doc's record. A refused attach lets go of the upload URL.
	uploadDoc(upload: DocUpload): Promise<Doc>;
	// Creates a batch: its lines uploaded as an NDJSON file and created with their SHA-256 (a
	// refused create lets go of the upload URL), or its twins selected by a rule with the call
	// made on each. Answers the batch's record.
	createBatch(input: BatchInput): Promise<Batch>;
	// The batch's record, read every intervalMs (1000): yielded when its status or progress
	// changed, to the status it ends in (hash_mismatch, validation_failed, completed,
	// cancelled), yielded last. The signal stops it, throwing its reason.
	followBatch(batch: string, options?: FollowOptions): AsyncIterable<Batch>;
	// Each line of an ended batch's results (its record's results.url), read as it arrives.
	batchResults(batch: Batch): AsyncIterable<BatchResult>;
	createExport(body?: ExportInput): Promise<Export>;
	// An export's record, followed as followBatch follows a batch's, to completed or cancelled.
	followExport(exportId: string, options?: FollowOptions): AsyncIterable<Export>;
	// The openapi-fetch client underneath: answers as { data, error, response }, nothing thrown.
	api: Client<paths>;
};

export function createClient(options: ClientOptions): TwinRegistryClient {
	const baseUrl = options.baseUrl.replace(/\/+$/, "");
	const { credential } = options;
	const send: Fetch = options.fetch ?? ((request) => fetch(request));
	const retry = options.retry === true ? {} : options.retry || undefined;
	// The credential is read for each attempt, so that a retry goes with a refreshed token; a call
	// that sets its own Authorization header keeps it.
	const authorized: Fetch = async (request) => {
		if (credential !== undefined && !request.headers.has("authorization")) {
			request.headers.set("authorization", typeof credential === "function" ? await credential() : credential);
		}
		return send(request);
	};
	const headers = Object.fromEntries(
		Object.entries(options.headers ?? {}).filter(
			([name]) => credential === undefined || name.toLowerCase() !== "authorization",
		),
	);
	const api = createFetchClient<paths>({
		baseUrl,
		fetch: retry ? retryingFetch(authorized, retry) : authorized,
		headers,
		querySerializer: { array: { style: "form", explode: false } },
	});

	const call = <M extends Method>(method: M) =>
		(async (path: string, init?: Record<string, unknown>) => {
			const { data, error, response } = await api.request(method, path as never, init as never);
			if (!response.ok) throw TwinRegistryError.of(response, error);
			return data;
		}) as unknown as Call<M>;
	const get = call("get");
	const post = call("post");
	const remove = call("delete");

	// The pages of a paged read, each asked for with the cursor of the one before, to a null cursor.
	async function* pages<Page extends { cursor: string | null }>(
		read: (cursor: string | undefined) => Promise<Page>,
	): AsyncGenerator<Page> {
		let cursor: string | undefined;
		do {
			const page = await read(cursor);
			yield page;
			cursor = page.cursor ?? undefined;
		} while (cursor !== undefined);
	}

	async function* scanTwins(query: Omit<ScanQuery, "cursor"> = {}): AsyncGenerator<string | Twin> {
		for await (const page of pages((cursor) => get("/twins", { params: { query: { ...query, cursor } } })))
			yield* page.twins;
	}

	function queryTimeseries(timeseries: string, query: Omit<TimeseriesQuery, "cursor">) {
		return pages((cursor) =>
			get("/account/services/timeseries/{timeseries}/data", {
				params: { path: { timeseries }, query: { ...query, cursor } },
			}),
		);
	}

	function stream(streamOptions: StreamOptions): NotificationStream {
		const streamToken = async () => (await post("/notifications/stream/tokens", { body: {} })).token;
		const withHeaders: Fetch = (request) => {
			for (const [name, value] of Object.entries(headers))
				if (!request.headers.has(name)) request.headers.set(name, value);
			return authorized(request);
		};
		return openStream({ baseUrl, fetch: withHeaders, streamToken }, streamOptions);
	}

	// Upload and download URLs are their own credential: what goes to them carries none.
	const bare: Fetch = retry ? retryingFetch(send, retry) : send;

	// Bytes to a new upload URL (POST /cache), PUT there with their Content-Length and
	// Content-Type, then the upload's handler given to `use`, which hands it over (an attach, a
	// batch). A refusal of the PUT or of `use` lets go of the upload URL.
	async function withUpload<T>(
		file: { bytes: Uint8Array; contentType: string; validityTs?: number },
		use: (handler: string) => Promise<T>,
	): Promise<T> {
		const { handler, url } = await post("/cache", {
			body: file.validityTs === undefined ? {} : { validity_ts: file.validityTs },
		});
		try {
			const put = await bare(
				new Request(url, {
					method: "PUT",
					headers: { "content-type": file.contentType, "content-length": String(file.bytes.byteLength) },
					body: file.bytes as Uint8Array<ArrayBuffer>,
				}),
			);
			if (!put.ok) {
				const error = await TwinRegistryError.from(put);
				// The URL already holds its file: a retried PUT whose first answer was lost.
				if (!error.is("upload_used")) throw error;
			} else await put.body?.cancel();
			return await use(handler);
		} catch (error) {
			// Refused: the upload URL, and any bytes it holds, are let go of. After a network failure
			// the upload may have been handed over, so it is left to expire.
			if (error instanceof TwinRegistryError)
				await remove("/cache/{handler}", { params: { path: { handler } } }).catch(() => {});
			throw error;
		}
	}

	async function uploadDoc(upload: DocUpload): Promise<Doc> {
		const bytes = await bytesOf(upload.body);
		const hash = await sha256Hex(bytes);
		const contentType =
			upload.contentType ??
			(upload.body instanceof Blob && upload.body.type ? upload.body.type : "application/octet-stream");
		return withUpload({ bytes, contentType, validityTs: upload.validityTs }, async (handler) => {
			const entry = {
				handler,
				hash,
				...(upload.description === undefined ? {} : { description: upload.description }),
				...(upload.storageClass === undefined ? {} : { storage_class: upload.storageClass }),
			};
			const { docs } = await post("/twins/{twin}/docs", {
				params: { path: { twin: upload.twin } },
				body: { docs: { [upload.name]: entry } },
			});
			return docs[upload.name] as Doc;
		});
	}

	async function createBatch(input: BatchInput): Promise<Batch> {
		const { operation } = input;
		const description = input.description === undefined ? {} : { description: input.description };
		if (input.lines === undefined)
			return post("/batches", { body: { operation, twins: input.twins, template: input.template, ...description } });
		const bytes = new TextEncoder().encode(ndjson(input.lines));
		const hash = await sha256Hex(bytes);
		return withUpload({ bytes, contentType: "application/x-ndjson" }, (handler) =>
			post("/batches", { body: { operation, handler, hash, ...description } }),
		);
	}

	const followBatch = (batch: string, followOptions?: FollowOptions) =>
		follow((signal) => get("/batches/{batch}", { params: { path: { batch } }, signal }), BATCH_ENDS, followOptions);

	async function* batchResults(batch: Batch): AsyncGenerator<BatchResult> {
		if (!batch.results)
			throw new TypeError(
				`The batch ${batch.batch} has no results while ${batch.status}: a batch has them once completed or cancelled`,
			);
		const response = await bare(new Request(batch.results.url));
		if (!response.ok) throw await TwinRegistryError.from(response);
		if (response.body) yield* ndjsonLines(response.body) as AsyncGenerator<BatchResult>;
	}

	const createExport = (body: ExportInput = {}) => post("/exports", { body });

	const followExport = (exportId: string, followOptions?: FollowOptions) =>
		follow(
			(signal) => get("/exports/{export}", { params: { path: { export: exportId } }, signal }),
			EXPORT_ENDS,
			followOptions,
		);

	return {
		get,
		post,
		patch: call("patch"),
		put: call("put"),
		delete: remove,
		scanTwins: scanTwins as TwinRegistryClient["scanTwins"],
		queryTimeseries,
		stream,
		uploadDoc,
		createBatch,
		followBatch,
		batchResults,
		createExport,
		followExport,
		api,
	};
}
