import type { Operation } from "../operations/operation";

// What the HTTP layer serves: one operation under one method and path. The table of them is
// src/routes.ts. An operation's module is loaded on the route's first request and kept
// (base/load-once.ts), so a new isolate builds the schemas of what it serves rather than of
// every operation (startup CPU, docs/benchmarks.md); the API document and the tests read the
// records through loadRoutes.
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
// `head`: a GET route that answers HEAD too, as GET without the body (a download link checked
// with `curl -I`).
export type Route = { method: Method; path: string; head?: true; load: () => Promise<Operation> };
export type LoadedRoute = { method: Method; path: string; operation: Operation };

export function loadRoutes(routes: Route[]): Promise<LoadedRoute[]> {
	return Promise.all(routes.map(async ({ method, path, load }) => ({ method, path, operation: await load() })));
}
