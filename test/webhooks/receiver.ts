// A webhook receiver on 127.0.0.1 for the tests, started once by vitest's globalSetup; its
// port reaches the tests through `inject("receiverPort")`.
//
// POST /r/<id>/<script> answers by script: "ok", a status code ("404", "500"), "302" (to
// /r/<id>-redirected/ok), "hang" (never answers), or a comma list played in turn
// ("500,500,ok"). A status may carry a Retry-After: "503~120" (seconds) or "429~d90" (an HTTP
// date 90 s ahead). GET /log/<id> answers every request
// recorded for <id>, each with the time it arrived. POST /release/<id> answers 200 to the
// requests of <id> that are hanging, so that none is left for its sender to give up on.
//
// It also hosts JWK Sets for the identity provider tests (test/federation): PUT /jwks/<id> with
// `{"jwks": <set>}` stores a set, `{"status": 500}` has it answer that status instead,
// `{"redirect": true}` a 302 to /jwks/<id>-moved, and `{"text": "..."}` that text as the body.
// GET /jwks/<id> answers what was stored (404 before any PUT) and is recorded under <id>, so
// that a test counts the service's fetches with GET /log/<id>.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

type Recorded = { path: string; headers: IncomingMessage["headers"]; body: string; at: number };
type Hosted = { jwks?: unknown; status?: number; redirect?: boolean; text?: string };

export default async function setup(project: TestProject) {
	const log = new Map<string, Recorded[]>();
	const played = new Map<string, number>();
	const hanging = new Map<string, ServerResponse[]>();
	const hosted = new Map<string, Hosted>();

	const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
		const [, kind, id, script = "ok"] = (req.url ?? "").split("?")[0].split("/");
		if (req.method === "GET" && kind === "log") {
			res.setHeader("content-type", "application/json");
			return res.end(JSON.stringify(log.get(id) ?? []));
		}
		if (req.method === "POST" && kind === "release") {
			for (const waiting of hanging.get(id) ?? []) waiting.writeHead(200).end();
			hanging.delete(id);
			return res.end();
		}
		let body = "";
		for await (const chunk of req) body += chunk;
		if (kind === "jwks" && req.method === "PUT") {
			hosted.set(id, JSON.parse(body) as Hosted);
			return res.writeHead(204).end();
		}
		if (kind === "jwks" && req.method === "GET") {
			log.set(id, [...(log.get(id) ?? []), { path: req.url ?? "", headers: req.headers, body, at: Date.now() }]);
			const set = hosted.get(id);
			if (!set) return res.writeHead(404).end();
			if (set.redirect) return res.writeHead(302, { location: `/jwks/${id}-moved` }).end();
			if (set.status) return res.writeHead(set.status).end();
			if (set.text !== undefined) return res.writeHead(200, { "content-type": "application/json" }).end(set.text);
			return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(set.jwks));
		}
		log.set(id, [...(log.get(id) ?? []), { path: req.url ?? "", headers: req.headers, body, at: Date.now() }]);

		const steps = script.split(",");
		const turn = played.get(id) ?? 0;
		played.set(id, turn + 1);
		const step = steps[Math.min(turn, steps.length - 1)];
		if (step === "hang") return void hanging.set(id, [...(hanging.get(id) ?? []), res]);
		if (step === "302") {
			res.writeHead(302, { location: `/r/${id}-redirected/ok` });
			return res.end();
		}
		const [status, retryAfter] = step.split("~");
		const headers: Record<string, string> = {};
		if (retryAfter?.startsWith("d"))
			headers["retry-after"] = new Date(Date.now() + Number(retryAfter.slice(1)) * 1000).toUTCString();
		else if (retryAfter) headers["retry-after"] = retryAfter;
		res.writeHead(status === "ok" ? 200 : Number(status), headers);
		res.end();
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	project.provide("receiverPort", (server.address() as AddressInfo).port);

	return async () => {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	};
}
