// The API document (/openapi.json), built from the route table and its zod schemas at build
// time rather than in every isolate: the Worker neither carries the document's builder nor
// spends an isolate's first request on it, and Workers Static Assets serve the file. The TypeScript sources are
// bundled for Node in memory and run once in a child process that prints the document.
import { execFileSync } from "node:child_process";
import { buildSync } from "esbuild";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ENTRY = `import { routes } from "./src/routes";
import { loadRoutes } from "./src/http/route";
import { openApiDocument } from "./src/http/openapi";
process.stdout.write(JSON.stringify(openApiDocument(await loadRoutes(routes))));`;

export function openApiText() {
	const { outputFiles } = buildSync({
		stdin: { contents: ENTRY, resolveDir: ROOT, loader: "ts", sourcefile: "openapi-entry.ts" },
		bundle: true,
		platform: "node",
		format: "esm",
		write: false,
		logLevel: "error",
	});
	return execFileSync(process.execPath, ["--input-type=module"], {
		input: outputFiles[0].text,
		maxBuffer: 16 * 1024 * 1024,
	}).toString();
}
