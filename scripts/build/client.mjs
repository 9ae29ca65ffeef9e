// The typed client's generated files: its types (client/src/schema.d.ts), by openapi-typescript
// from the API document the route table builds, exactly as its command line would write them,
// and its copy of the error catalogue (client/src/codes.ts) from src/base/errors.ts. `npm run
// client:generate` rewrites both; test/node/client.test.ts fails while either is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildSync } from "esbuild";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";
import { parseCli } from "../cli.mjs";
import { openApiText } from "./openapi.mjs";

export const CLIENT_SCHEMA = fileURLToPath(new URL("../../client/src/schema.d.ts", import.meta.url));
export const CLIENT_CODES = fileURLToPath(new URL("../../client/src/codes.ts", import.meta.url));

export async function clientSchemaText(document = openApiText()) {
	return `${COMMENT_HEADER}${astToString(await openapiTS(document, { silent: true }))}`;
}

export function committedClientSchema() {
	return readFileSync(CLIENT_SCHEMA, "utf8");
}

// The catalogue as the client carries it: code name to status, subcode and description.
export function clientCodesText(catalogue) {
	const rows = Object.entries(catalogue).map(
		([code, { status, subcode, description }]) =>
			`\t${code}: { status: ${status}, subcode: ${subcode}, description: ${JSON.stringify(description)} },`,
	);
	return [
		"// The service's error catalogue (src/base/errors.ts), copied by `npm run client:generate`: each",
		"// answer's `code` is a key of it and its `subcode` the key's subcode. Do not edit.",
		"export const ERRORS = {",
		...rows,
		"} as const;",
		"",
	].join("\n");
}

export function committedClientCodes() {
	return readFileSync(CLIENT_CODES, "utf8");
}

// src/base/errors.ts is TypeScript; esbuild turns it into a module Node can import.
async function serviceCatalogue() {
	const { outputFiles } = buildSync({
		entryPoints: [fileURLToPath(new URL("../../src/base/errors.ts", import.meta.url))],
		bundle: true,
		platform: "node",
		format: "esm",
		write: false,
		logLevel: "error",
	});
	const { ERRORS } = await import(`data:text/javascript,${encodeURIComponent(outputFiles[0].text)}`);
	return ERRORS;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
	parseCli({
		usage: `
usage: npm run client:generate

Regenerates the typed client's generated files from the service: client/src/schema.d.ts from
the API document the route table builds, and client/src/codes.ts from the error catalogue
(test/node/client.test.ts fails while either is stale).

  -h, --help    this text
`,
	});
	writeFileSync(CLIENT_SCHEMA, await clientSchemaText());
	writeFileSync(CLIENT_CODES, clientCodesText(await serviceCatalogue()));
}
