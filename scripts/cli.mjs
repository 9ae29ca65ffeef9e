// The command line of every script a user runs through npm: `--help` (or `-h`) prints the
// script's usage on stdout and exits 0; an unknown or malformed option prints what was wrong
// and the usage on stderr and exits 2, without a stack trace.
import { parseArgs } from "node:util";

export function parseCli({ usage, options = {}, allowPositionals = false, args = process.argv.slice(2) }) {
	const text = `${usage.trim()}\n`;
	if (args.includes("--help") || args.includes("-h")) {
		process.stdout.write(text);
		process.exit(0);
	}
	try {
		return parseArgs({ args, options, allowPositionals, strict: true });
	} catch (error) {
		process.stderr.write(`${error.message}\n\n${text}`);
		process.exit(2);
	}
}
