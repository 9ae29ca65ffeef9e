// Fills the git-ignored `assets/` folder that Workers Static Assets serve (see [assets] in
// wrangler.toml): the /docs page and headers from `static/`, swagger-ui's two files from the
// swagger-ui-dist package, and the API document built from the route table (openapi.mjs,
// beside this file), so the Worker's bundle carries none of them. Files are rewritten only
// when their content changed, so a running `wrangler dev` does not reload for nothing.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { openApiText } from "./openapi.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const ASSETS = join(ROOT, "assets");
const STATIC = join(ROOT, "static");
const SWAGGER = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

function files(dir) {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? files(path) : [path];
	});
}

function write(to, content) {
	if (existsSync(to) && readFileSync(to).equals(content)) return;
	mkdirSync(dirname(to), { recursive: true });
	writeFileSync(to, content);
}

export function prepareAssets() {
	for (const file of files(STATIC)) write(join(ASSETS, relative(STATIC, file)), readFileSync(file));
	for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"])
		write(join(ASSETS, "docs", name), readFileSync(join(SWAGGER, name)));
	write(join(ASSETS, "openapi.json"), Buffer.from(openApiText()));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) prepareAssets();
