// Fills the git-ignored `assets/` folder that Workers Static Assets serve (see [assets] in
// wrangler.toml): the /docs page and headers from `static/`, and swagger-ui's two files from the
// swagger-ui-dist package, so the Worker's bundle carries none of them. Files are rewritten only
// when their content changed, so a running `wrangler dev` does not reload for nothing.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const ASSETS = join(ROOT, "assets");
const STATIC = join(ROOT, "static");
const SWAGGER = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

function files(dir) {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? files(path) : [path];
	});
}

function place(from, to) {
	const content = readFileSync(from);
	if (existsSync(to) && readFileSync(to).equals(content)) return;
	mkdirSync(dirname(to), { recursive: true });
	cpSync(from, to);
}

export function prepareAssets() {
	for (const file of files(STATIC)) place(file, join(ASSETS, relative(STATIC, file)));
	for (const name of ["swagger-ui-bundle.js", "swagger-ui.css"]) place(join(SWAGGER, name), join(ASSETS, "docs", name));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) prepareAssets();
