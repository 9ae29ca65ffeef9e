// The resident memory of the local runtime, for the bench parts that measure what the Worker
// and its objects hold: the workerd processes under the dev server a bench started. Linux
// only: read from /proc.
import { readdirSync, readFileSync } from "node:fs";

// The pids of every process below this one (the dev server's wrangler, and the workerd
// processes it runs) whose command is `name`. Linux only: read from /proc.
export function descendants(name) {
	const parents = new Map();
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
			// pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
			const close = stat.lastIndexOf(")");
			const comm = stat.slice(stat.indexOf("(") + 1, close);
			const ppid = Number(stat.slice(close + 2).split(" ")[1]);
			parents.set(Number(entry), { ppid, comm });
		} catch {}
	}
	const below = (pid) => {
		for (let at = parents.get(pid)?.ppid; at; at = parents.get(at)?.ppid) if (at === process.pid) return true;
		return false;
	};
	return [...parents].filter(([pid, p]) => p.comm === name && below(pid)).map(([pid]) => pid);
}

// VmRSS in bytes, or 0 once the process is gone.
export function rss(pid) {
	try {
		const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
		return kb ? Number(kb) * 1024 : 0;
	} catch {
		return 0;
	}
}

// The resident memory of the workerd processes under this one, summed, in bytes.
export function runtimeMemory() {
	const pids = descendants("workerd");
	if (pids.length === 0)
		throw new Error("no workerd process under this one: the bench reads their memory from /proc (Linux)");
	return pids.reduce((sum, pid) => sum + rss(pid), 0);
}
