import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { CLIENT_SCHEMA, clientSchemaText, committedClientSchema } from "../../scripts/build/client.mjs";
import { openApiText } from "../../scripts/build/openapi.mjs";

const document = openApiText();
const parsed = JSON.parse(document) as {
	paths: Record<string, Record<string, { operationId: string; requestBody?: { content: Record<string, { example?: unknown }> } }>>;
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
			lines.push(`export const ${operation.operationId} = ${JSON.stringify(example)} satisfies paths[${JSON.stringify(path)}][${JSON.stringify(method)}]["requestBody"] extends { content: { "application/json": infer B } } | undefined ? B : never;`);
		}
	}
	return lines.join("\n");
}

function compile(name: string, text: string): string[] {
	const file = join(fileURLToPath(new URL("../../client/src/", import.meta.url)), name);
	const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ["lib.es2022.d.ts"], types: [], skipLibCheck: true };
	const host = ts.createCompilerHost(options);
	const { getSourceFile, fileExists, readFile } = host;
	host.getSourceFile = (path, version, ...rest) => (path === file ? ts.createSourceFile(path, text, version) : getSourceFile.call(host, path, version, ...rest));
	host.fileExists = (path) => path === file || fileExists.call(host, path);
	host.readFile = (path) => (path === file ? text : readFile.call(host, path));
	const program = ts.createProgram([file], options, host);
	return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

// Node only: it runs openapi-typescript and the TypeScript compiler.
describe("the typed client", () => {
	it("carries the types openapi-typescript generates from the current document (npm run client:generate)", async () => {
		expect(committedClientSchema() === (await clientSchemaText(document)), `${CLIENT_SCHEMA} is stale: run npm run client:generate`).toBe(true);
	});

	it("compiles against every example call of the document", () => {
		const calls = exampleCalls();
		const bodies = Object.values(parsed.paths).flatMap((methods) => Object.values(methods)).filter((operation) => operation.requestBody?.content["application/json"]);
		expect(calls.split("\n").length - 1).toBe(bodies.length);
		expect(compile("examples.check.ts", calls)).toEqual([]);
	});

	it("refuses a call the document does not allow", () => {
		const wrong = 'import type { paths } from "./schema";\nexport const count = { count: "20" } satisfies NonNullable<paths["/twins"]["get"]["parameters"]["query"]>;';
		expect(compile("wrong.check.ts", wrong).join("\n")).toContain("not assignable to type 'number'");
	});
});
