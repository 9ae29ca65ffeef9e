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

// The source files under `folder` (TypeScript and JavaScript, node_modules and builds left out),
// for the tests that hold the code's comments to the documentation.
export function sourceFiles(folder) {
	const found = [];
	const walk = (dir) => {
		for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
			const path = `${dir}/${entry.name}`;
			if (entry.isDirectory()) {
				if (!["node_modules", "dist", "build"].includes(entry.name)) walk(path);
			} else if (/\.(ts|mts|mjs|js|cjs)$/.test(entry.name)) found.push(path);
		}
	};
	walk(folder);
	return found.sort();
}

// A CommonJS configuration file (.dependency-cruiser.cjs), loaded as its tool loads it.
export function loadCommonJs(path) {
	return createRequire(import.meta.url)(join(ROOT, path));
}

// The code of the fenced blocks whose info string is `sh tutorial`, in order: the commands of
// docs/tutorial.md that test/e2e/tutorial.test.ts runs and test/node/reference.test.ts holds to
// the route table. Other blocks (output, sketches) are left out.
export function tutorialBlocks(text) {
	const blocks = [];
	let current;
	for (const line of text.split("\n")) {
		if (current && /^```\s*$/.test(line)) {
			blocks.push(current.join("\n"));
			current = undefined;
		} else if (current) current.push(line);
		else if (/^```sh tutorial\s*$/.test(line)) current = [];
	}
	return blocks;
}
