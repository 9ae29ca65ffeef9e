// What the Node tests read from the repository itself: the README and docs/, and the
// configuration files the documentation describes, so that a test can hold a table in the
// documentation to the code it copies. Paths are relative to the repository's root.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export function readText(path) {
	return readFileSync(join(ROOT, path), "utf8");
}

export function exists(path) {
	return existsSync(join(ROOT, path));
}

// The README and every markdown file of docs/.
export function markdownFiles() {
	const docs = readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md"));
	return ["README.md", ...docs.sort().map((name) => `docs/${name}`)];
}

// A CommonJS configuration file (.dependency-cruiser.cjs), loaded as its tool loads it.
export function loadCommonJs(path) {
	return createRequire(import.meta.url)(join(ROOT, path));
}
