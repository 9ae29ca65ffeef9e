import type { Route } from "./route";
import { openApiDocument } from "./openapi";

// The API document, built once per isolate from the route table. Its reference page (/docs)
// is not here: Workers Static Assets serve it (see [assets] in wrangler.toml), so swagger-ui
// stays out of the Worker's bundle and its cold start.

export type Page = { path: string; handler: () => Response };

export function documentPages(routes: Route[]): Page[] {
	let document: string | undefined;
	return [
		{
			path: "/openapi.json",
			handler: () => {
				document ??= JSON.stringify(openApiDocument(routes));
				return new Response(document, { headers: { "content-type": "application/json" } });
			},
		},
	];
}
