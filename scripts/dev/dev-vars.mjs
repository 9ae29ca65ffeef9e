import { existsSync, readFileSync } from "node:fs";

export const DEV_VARS = ".dev.vars";

export function readDevVars() {
	if (!existsSync(DEV_VARS)) return {};
	const vars = {};
	for (const line of readFileSync(DEV_VARS, "utf8").split("\n")) {
		const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"?(.*?)"?\s*$/.exec(line);
		if (match) vars[match[1]] = match[2];
	}
	return vars;
}
