// Secrets reach the dev scripts through the environment or a file, never as an argument:
// npm prints a script's whole command line before it runs it.
import { readFileSync } from "node:fs";

// The first line of the file, trimmed; undefined without a file. An unreadable file is a
// plain message and exit 1, not a stack trace.
export function readSecretFile(path, option) {
	if (path === undefined) return undefined;
	try {
		const secret = readFileSync(path, "utf8").split("\n")[0].trim();
		if (secret) return secret;
		console.error(`${option}: ${path} is empty`);
	} catch (error) {
		console.error(`${option}: cannot read ${path} (${error.code ?? error.message})`);
	}
	process.exit(1);
}
