import { describe, expect, it } from "vitest";
import {
	exists,
	loadCommonJs,
	markdownFiles,
	readText,
	sourceFiles,
	tutorialBlocks,
} from "../../scripts/test/repository.mjs";
import { ERRORS } from "../../src/base/errors";
import { routes as routeTable } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";
import { VARIABLES } from "../../src/rules/variables";

const routes = await loadRoutes(routeTable);

// The reference in docs/ copies tables the code holds: the routes, the error catalogue, the
// layer rules, the account limits. Each copy is held to its source here, both ways, and a
// failure says which row to add, change or remove. The README and docs/ also name files,
// npm scripts and each other's sections; those must exist.

// The cells of one markdown table row; `\|` stays inside its cell.
function cells(line: string): string[] {
	return line
		.trim()
		.replace(/^\|/, "")
		.replace(/\|$/, "")
		.split(/(?<!\\)\|/)
		.map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

const plain = (cell: string) => cell.replace(/`/g, "").trim();

// The rows of the table in `file` whose header row is exactly `header`.
function table(file: string, header: string[]): string[][] {
	const lines = readText(file).split("\n");
	const start = lines.findIndex((line) => line.trim().startsWith("|") && cells(line).join("|") === header.join("|"));
	if (start < 0) throw new Error(`${file} has no table whose header is | ${header.join(" | ")} |`);
	const rows: string[][] = [];
	for (const line of lines.slice(start + 2)) {
		if (!line.trim().startsWith("|")) break;
		const row = cells(line);
		if (row.length !== header.length)
			throw new Error(`${file}: a row of the | ${header.join(" | ")} | table has ${row.length} cells: ${line}`);
		rows.push(row);
	}
	return rows;
}

// Lines outside fenced code blocks.
function prose(text: string): string[] {
	let fenced = false;
	return text.split("\n").filter((line) => {
		if (line.startsWith("```")) fenced = !fenced;
		return !fenced && !line.startsWith("```");
	});
}

// GitHub's anchor for a heading.
function anchor(heading: string): string {
	return heading
		.toLowerCase()
		.replace(/[^\p{L}\p{N}_\- ]/gu, "")
		.replace(/ /g, "-");
}

function resolvePath(from: string, target: string): string {
	const parts = from.split("/").slice(0, -1);
	for (const part of target.split("/")) {
		if (part === "..") parts.pop();
		else if (part !== ".") parts.push(part);
	}
	return parts.join("/");
}

describe("the route table in docs/operations.md", () => {
	const FILE = "docs/operations.md";
	const HEADER = ["method", "path", "operation", "auth", "what it does"];
	const documented = table(FILE, HEADER).map((row) => row.map(plain));
	const served = routes.map((route) => [
		route.method,
		route.path.replace(/:(\w+)\+?/g, "{$1}"),
		route.operation.name,
		route.operation.auth,
		route.operation.summary,
	]);
	const key = (row: string[]) => `${row[0]} ${row[1]}`;
	const markdown = (row: string[]) => `| ${row[0]} | \`${row[1]}\` | ${row.slice(2).join(" | ")} |`;

	it("lists every route the Worker serves, once, and no other", () => {
		const problems: string[] = [];
		for (const route of served) {
			const rows = documented.filter((row) => key(row) === key(route));
			if (rows.length === 0) problems.push(`add to ${FILE}: ${markdown(route)}`);
			if (rows.length > 1) problems.push(`${FILE} lists ${key(route)} ${rows.length} times: keep one row`);
		}
		for (const row of documented) {
			if (!served.some((route) => key(route) === key(row)))
				problems.push(`remove from ${FILE}, src/routes.ts serves no ${key(row)}: ${markdown(row)}`);
		}
		expect(problems).toEqual([]);
	});

	it("gives each route its operation name, credential and summary", () => {
		const problems: string[] = [];
		for (const route of served) {
			const row = documented.find((row) => key(row) === key(route));
			if (row && row.join("|") !== route.join("|"))
				problems.push(`in ${FILE}, change\n  ${markdown(row)}\nto\n  ${markdown(route)}`);
		}
		expect(problems).toEqual([]);
	});
});

describe("the error catalogue in docs/errors.md", () => {
	const FILE = "docs/errors.md";
	const HEADER = ["subcode", "status", "code", "description", "meaning"];
	const documented = table(FILE, HEADER).map((row) => row.map(plain));
	const catalogue = Object.entries(ERRORS).map(([code, error]) => [
		String(error.subcode),
		String(error.status),
		code,
		error.description,
	]);
	const markdown = (row: string[], meaning: string) =>
		`| ${row[0]} | ${row[1]} | \`${row[2]}\` | ${row[3]} | ${meaning} |`;

	it("holds every code of src/base/errors.ts with its subcode, status and description, and no other", () => {
		const problems: string[] = [];
		for (const error of catalogue) {
			const rows = documented.filter((row) => row[2] === error[2]);
			if (rows.length === 0) problems.push(`add to ${FILE}: ${markdown(error, "<when it is answered>")}`);
			else if (rows.length > 1) problems.push(`${FILE} lists ${error[2]} ${rows.length} times: keep one row`);
			else if (rows[0].slice(0, 4).join("|") !== error.join("|")) {
				problems.push(
					`in ${FILE}, change\n  ${markdown(rows[0].slice(0, 4), rows[0][4])}\nto\n  ${markdown(error, rows[0][4])}`,
				);
			}
		}
		for (const row of documented) {
			if (!(row[2] in ERRORS))
				problems.push(`remove from ${FILE}, src/base/errors.ts has no code ${row[2]}: ${markdown(row, row[4])}`);
		}
		expect(problems).toEqual([]);
	});

	it("explains every code", () => {
		expect(documented.filter((row) => !row[4]).map((row) => `${FILE}: write what ${row[2]} means`)).toEqual([]);
	});
});

describe("the layers in docs/design.md", () => {
	const FILE = "docs/design.md";
	type Rule = { name: string; from: { path: string }; to: { pathNot?: string[] } };
	const { forbidden } = loadCommonJs(".dependency-cruiser.cjs") as { forbidden: Rule[] };
	const folder = (pattern: string) => /^\^src\/([\w-]+)\/$/.exec(pattern)?.[1];
	// Each layer rule of .dependency-cruiser.cjs: the folder, and the folders it may import.
	const rules = new Map(
		forbidden
			.filter((rule) => rule.name.endsWith("-imports-only-below"))
			.map((rule) => {
				const layer = folder(rule.from.path) as string;
				const below = (rule.to.pathNot ?? []).map(folder).filter((name): name is string => !!name && name !== layer);
				return [layer, below.sort()] as const;
			}),
	);
	const documented = new Map(
		table(FILE, ["layer (top first)", "what", "may import"]).flatMap((row) => {
			const layer = /^`src\/([\w-]+)\/`$/.exec(row[0])?.[1];
			if (!layer) return [];
			const below = row[2].startsWith("nothing") ? [] : row[2].split(",").map(plain);
			return [[layer, below.sort()] as const];
		}),
	);

	it("finds the layer rules", () => {
		expect(rules.size).toBeGreaterThan(5);
	});

	it("say what .dependency-cruiser.cjs says each layer may import, for every layer it has", () => {
		const problems: string[] = [];
		const mayImport = (below: readonly string[]) => (below.length ? below.join(", ") : "nothing of `src/`");
		for (const [layer, below] of rules) {
			const row = documented.get(layer);
			if (!row) problems.push(`add to ${FILE} a row for \`src/${layer}/\` that may import ${mayImport(below)}`);
			else if (row.join() !== below.join())
				problems.push(
					`in ${FILE}, the row of \`src/${layer}/\` says it may import ${mayImport(row)}: make it ${mayImport(below)}`,
				);
		}
		for (const layer of documented.keys()) {
			if (!rules.has(layer))
				problems.push(`remove the row of \`src/${layer}/\` from ${FILE}: .dependency-cruiser.cjs has no such layer`);
		}
		expect(problems).toEqual([]);
	});
});

describe("the account limits the documentation states", () => {
	const vars = new Map([...readText("wrangler.toml").matchAll(/^(MAX_\w+)\s*=\s*(\d+)/gm)].map((m) => [m[1], m[2]]));

	it("are wrangler.toml's", () => {
		const problems: string[] = [];
		for (const file of markdownFiles()) {
			for (const [, name, value] of readText(file).matchAll(/`(MAX_\w+)`(?: = | \()(\d+)/g)) {
				if (vars.get(name) !== value)
					problems.push(`${file} gives ${name} as ${value}; wrangler.toml sets ${vars.get(name) ?? "no such var"}`);
			}
		}
		expect(problems).toEqual([]);
	});

	it("include every limit of wrangler.toml in the table of docs/design.md", () => {
		const text = readText("docs/design.md");
		const missing = [...vars].filter(([name, value]) => !text.includes(`\`${name}\` = ${value}`));
		expect(missing.map(([name, value]) => `add \`${name}\` = ${value} to the limits table of docs/design.md`)).toEqual(
			[],
		);
	});
});

describe("the rule language in docs/permission-model.md", () => {
	it("names every variable of src/rules/variables.ts", () => {
		const rows = table("docs/permission-model.md", ["element", "forms"]).filter((row) => row[0].includes("variables"));
		const named = new Set(rows.flatMap((row) => [...row[1].matchAll(/`([A-Za-z_]+)[`.]/g)].map((m) => m[1])));
		const missing = Object.keys(VARIABLES).filter((name) => !named.has(name));
		expect(
			missing.map((name) => `add \`${name}\` to the variables of the rule language table in docs/permission-model.md`),
		).toEqual([]);
	});
});

describe("the README and docs/", () => {
	const files = markdownFiles();

	it("link to files and headings that exist", () => {
		const problems: string[] = [];
		for (const file of files) {
			for (const line of prose(readText(file))) {
				for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
					if (/^[a-z]+:/.test(target)) continue;
					const [path, hash] = target.split("#");
					const linked = path ? resolvePath(file, path) : file;
					if (!exists(linked)) {
						problems.push(`${file} links to ${target}, but there is no ${linked}`);
						continue;
					}
					if (hash === undefined || !linked.endsWith(".md")) continue;
					const headings = prose(readText(linked)).flatMap((l) =>
						/^#{1,6} /.test(l) ? [anchor(l.replace(/^#+ /, ""))] : [],
					);
					if (!headings.includes(hash))
						problems.push(`${file} links to ${target}, but ${linked} has no heading #${hash}`);
				}
			}
		}
		expect(problems).toEqual([]);
	});

	it("name files and folders of the repository that exist", () => {
		const problems: string[] = [];
		for (const file of files) {
			for (const [, path] of readText(file).matchAll(
				/(?<![\w/.@-])((?:src|test|scripts|static|migrations|docs)\/[\w./-]*)/g,
			)) {
				const named = path.replace(/[.]+$/, "");
				if (!exists(named))
					problems.push(`${file} names ${named}, which does not exist: name where it is now, or drop it`);
			}
		}
		expect([...new Set(problems)]).toEqual([]);
	});

	it("name every npm script, and only those", () => {
		const scripts = Object.keys((JSON.parse(readText("package.json")) as { scripts: Record<string, string> }).scripts);
		const text = files.map(readText).join("\n");
		const named = new Set([...text.matchAll(/npm run (?:-s )?([\w:-]+)/g)].map((m) => m[1]));
		for (const [, short] of text.matchAll(/npm (start|test)\b/g)) named.add(short);
		const problems = [
			...scripts
				.filter((name) => !named.has(name))
				.map((name) => `package.json has the script ${name}: say what it does in the README or docs/`),
			...[...named]
				.filter((name) => !scripts.includes(name))
				.map((name) => `the README or docs/ name \`npm run ${name}\`, which package.json does not have`),
		];
		expect(problems).toEqual([]);
	});
});

// Decisions are cited by the page of docs/ that states them, never by a document a clone does
// not have: every source file, test, script and page is held to that here.
describe("the citations in the code and the docs", () => {
	// This file names what it looks for.
	const files = [
		...sourceFiles("src"),
		...sourceFiles("test"),
		...sourceFiles("scripts"),
		...sourceFiles("client/src"),
		...markdownFiles(),
	].filter((file) => file !== "test/node/reference.test.ts");
	const headingsOf = (page: string) =>
		prose(readText(page)).flatMap((l) => (/^#{1,6} /.test(l) ? [l.replace(/^#+ /, "").trim()] : []));

	it("cite no contract outside the repository: a § is an RFC's, on the same line", () => {
		const problems: string[] = [];
		for (const file of files) {
			readText(file)
				.split("\n")
				.forEach((line, i) => {
					if (/CONTRACT/.test(line) || (/§\s*\d/.test(line) && !/RFC \d+/.test(line)))
						problems.push(
							`${file}:${i + 1} cites a section the repository does not hold: cite the page of docs/ that states it`,
						);
				});
		}
		expect(problems).toEqual([]);
	});

	it("cite pages of docs/ that exist, and their headings as the pages write them", () => {
		const problems: string[] = [];
		for (const file of files) {
			// A comment's lines read as one: a heading may run on to the next line.
			const text = readText(file).replace(/\n\s*(\/\/|\*)\s*/g, " ");
			for (const [, page, quoted] of text.matchAll(/\bdocs\/([\w-]+\.md)(?:,? "([^"]+)")?/g)) {
				const path = `docs/${page}`;
				if (!exists(path)) problems.push(`${file} cites ${path}, which does not exist`);
				else if (quoted !== undefined && !headingsOf(path).includes(quoted))
					problems.push(`${file} cites "${quoted}" in ${path}, which has no such heading`);
			}
		}
		expect([...new Set(problems)]).toEqual([]);
	});
});

describe("the commands of docs/tutorial.md", () => {
	const FILE = "docs/tutorial.md";
	// Each curl command of the runnable blocks, continuation lines joined: its method (-X, else
	// PUT for -T, POST for -d without -G, else GET) and the path after $B, variables standing
	// for one segment each.
	const commands = tutorialBlocks(readText(FILE))
		.flatMap((block) => block.replace(/\\\n\s*/g, " ").split("\n"))
		.flatMap((line) => line.split(/\|/))
		.filter((command) => /\bcurl\b/.test(command) && command.includes("$B"))
		.map((command) => {
			const path = (/\$B(\/[^\s"'?]*)/.exec(command)?.[1] ?? "").replace(/\/+$/, "");
			const method =
				/-X (\w+)/.exec(command)?.[1] ??
				(/ -T /.test(command) ? "PUT" : / -d /.test(command) && !/ -G /.test(command) ? "POST" : "GET");
			return { method, path, command: command.trim() };
		});
	const patterns = routes.map((route) => ({
		method: route.method,
		path: route.path,
		match: new RegExp(`^${route.path.replace(/:\w+\+/g, "[^?]+").replace(/:\w+/g, "[^/?]+")}$`),
	}));

	it("are there to check", () => {
		expect(commands.length).toBeGreaterThan(30);
	});

	it("call only routes of the route table, with their methods (OPTIONS being any route's preflight)", () => {
		const problems = commands
			.filter(
				({ method, path }) =>
					!patterns.some((route) => (method === "OPTIONS" || route.method === method) && route.match.test(path)),
			)
			.map(({ method, path, command }) => `${FILE}: ${method} ${path} is no route of src/routes.ts (in: ${command})`);
		expect(problems).toEqual([]);
	});
});
