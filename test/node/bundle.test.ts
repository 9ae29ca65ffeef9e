import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function sources(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
	});
}

// zod's `z` export is a namespace object the bundler cannot shake: one value import of it puts
// every locale and the JSON-schema import into the Worker (about 560 KB before minifying).
// `import * as z from "zod"` lets it keep only what is used.
describe("the Worker's imports", () => {
	it("take zod as a namespace, never its z binding", () => {
		const offenders = sources(SRC).filter((file) => /import\s*\{[^}]*\bz\b[^}]*\}\s*from\s*["']zod["']/.test(readFileSync(file, "utf8").replace(/import type[^;]*;/g, "")));
		expect(offenders).toEqual([]);
	});
});
