import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { exchangeToken, TwinRegistryError } from "../../client/src/index";
import {
	CLIENT_CODES,
	CLIENT_SCHEMA,
	clientCodesText,
	clientSchemaText,
	committedClientCodes,
	committedClientSchema,
} from "../../scripts/build/client.mjs";
import { ERRORS } from "../../src/base/errors";
import { openApiText } from "../../scripts/build/openapi.mjs";

const document = openApiText();
const parsed = JSON.parse(document) as {
	paths: Record<
		string,
		Record<string, { operationId: string; requestBody?: { content: Record<string, { example?: unknown }> } }>
	>;
};

// Each body example of the document, as a client would write it, checked against the
// generated types with `satisfies` (so an unknown field or a string where a number belongs
// fails, as it would in a caller's code).
function exampleCalls(): string {
	const lines = ['import type { paths } from "./schema";'];
	for (const [path, methods] of Object.entries(parsed.paths)) {
		for (const [method, operation] of Object.entries(methods)) {
			const example = operation.requestBody?.content["application/json"]?.example;
			if (example === undefined) continue;
			lines.push(
				`export const ${operation.operationId} = ${JSON.stringify(example)} satisfies paths[${JSON.stringify(path)}][${JSON.stringify(method)}]["requestBody"] extends { content: { "application/json": infer B } } | undefined ? B : never;`,
			);
		}
	}
	return lines.join("\n");
}

function compile(name: string, text: string): string[] {
	const file = join(fileURLToPath(new URL("../../client/src/", import.meta.url)), name);
	const options: ts.CompilerOptions = {
		strict: true,
		noEmit: true,
		target: ts.ScriptTarget.ES2022,
		module: ts.ModuleKind.ES2022,
		moduleResolution: ts.ModuleResolutionKind.Bundler,
		lib: ["lib.es2022.d.ts"],
		types: [],
		skipLibCheck: true,
	};
	const host = ts.createCompilerHost(options);
	const { getSourceFile, fileExists, readFile } = host;
	host.getSourceFile = (path, version, ...rest) =>
		path === file ? ts.createSourceFile(path, text, version) : getSourceFile.call(host, path, version, ...rest);
	host.fileExists = (path) => path === file || fileExists.call(host, path);
	host.readFile = (path) => (path === file ? text : readFile.call(host, path));
	const program = ts.createProgram([file], options, host);
	return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

// Node only: it runs openapi-typescript and the TypeScript compiler.
describe("the typed client", () => {
	it("carries the types openapi-typescript generates from the current document (npm run client:generate)", async () => {
		expect(
			committedClientSchema() === (await clientSchemaText(document)),
			`${CLIENT_SCHEMA} is stale: run npm run client:generate`,
		).toBe(true);
	});

	it("carries the service's error catalogue (npm run client:generate)", () => {
		expect(
			committedClientCodes() === clientCodesText(ERRORS),
			`${CLIENT_CODES} is stale: run npm run client:generate`,
		).toBe(true);
	});

	it("compiles against every example call of the document", () => {
		const calls = exampleCalls();
		const bodies = Object.values(parsed.paths)
			.flatMap((methods) => Object.values(methods))
			.filter((operation) => operation.requestBody?.content["application/json"]);
		expect(calls.split("\n").length - 1).toBe(bodies.length);
		expect(compile("examples.check.ts", calls)).toEqual([]);
	});

	it("refuses a call the document does not allow", () => {
		const wrong =
			'import type { paths } from "./schema";\nexport const count = { count: "20" } satisfies NonNullable<paths["/twins"]["get"]["parameters"]["query"]>;';
		expect(compile("wrong.check.ts", wrong).join("\n")).toContain("not assignable to type 'number'");
	});
});

describe("exchangeToken", () => {
	const ACCOUNT = "18d52f52-d2b8-4164-b907-c7b4200f9689";
	const ID_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl";

	// A fetch that records the request it is given and answers with `status` and `body`.
	function fakeFetch(
		status: number,
		body: string,
		headers: Record<string, string> = { "content-type": "application/json" },
	) {
		const sent: Request[] = [];
		const fetch = async (request: Request) => {
			sent.push(request);
			return new Response(body, { status, headers });
		};
		return { sent, fetch };
	}

	it("posts the ID token, with no credential, and answers the User Token", async () => {
		const answer = {
			token: "eyJhbGciOiJIUzI1NiJ9.e30.mac",
			options: [],
			validity_ts: 1795791850,
			account: ACCOUNT,
			user: "6a0d9e3c-0b5e-4f0e-9d55-3f9a3c1e2b7d",
			provisioned: true,
		};
		const { sent, fetch } = fakeFetch(201, JSON.stringify(answer));
		const exchanged = await exchangeToken({
			baseUrl: "https://registry.example.com/",
			account: ACCOUNT,
			subjectToken: ID_TOKEN,
			options: ["refresh"],
			fetch,
		});
		expect(exchanged).toEqual(answer);
		expect(sent).toHaveLength(1);
		const [request] = sent;
		expect([request.method, request.url]).toEqual(["POST", "https://registry.example.com/token/exchange"]);
		expect(request.headers.get("content-type")).toBe("application/json");
		expect(request.headers.has("authorization")).toBe(false);
		// Fields left out are not sent: the service refuses any it does not know.
		expect(await request.json()).toEqual({ account: ACCOUNT, subject_token: ID_TOKEN, options: ["refresh"] });
	});

	it("throws a refusal as a TwinRegistryError with its status, subcode and trace", async () => {
		const envelope = {
			subcode: 401261,
			trace: "8b203d3e-18a0-4908-bb19-4664e42e1fae",
			description: "No identity provider of the account accepts the token",
		};
		const { fetch } = fakeFetch(401, JSON.stringify(envelope));
		const refusal = await exchangeToken({
			baseUrl: "https://registry.example.com",
			account: ACCOUNT,
			subjectToken: ID_TOKEN,
			fetch,
		}).catch((error: unknown) => error);
		expect(refusal).toBeInstanceOf(TwinRegistryError);
		expect(refusal).toMatchObject({
			status: 401,
			subcode: 401261,
			trace: envelope.trace,
			description: envelope.description,
		});
	});

	it("keeps the status of an answer that is not the envelope, with subcode 0", async () => {
		const { fetch } = fakeFetch(502, "Bad gateway", { "content-type": "text/plain", "x-request-id": "req-1" });
		const refusal = await exchangeToken({
			baseUrl: "https://registry.example.com",
			account: ACCOUNT,
			subjectToken: ID_TOKEN,
			fetch,
		}).catch((error: unknown) => error);
		expect(refusal).toMatchObject({
			name: "TwinRegistryError",
			status: 502,
			subcode: 0,
			trace: "req-1",
			description: "Bad gateway",
		});
	});
});
