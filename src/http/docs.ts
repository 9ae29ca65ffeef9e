import bundle from "swagger-ui-dist/swagger-ui-bundle.js";
import css from "swagger-ui-dist/swagger-ui.css";
import type { Route } from "../router";
import { openApiDocument } from "./openapi";

// The API document and a reference page for it. The page's assets come from the
// swagger-ui-dist package, bundled into the Worker: nothing is fetched from a CDN.

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Twin Registry API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="api"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#api", deepLinking: true, displayOperationId: true });\n`;

const POLICY = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

function asset(body: string, type: string) {
	return () =>
		new Response(body, {
			headers: { "content-type": type, "cache-control": "public, max-age=3600", "content-security-policy": POLICY },
		});
}

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
		{ path: "/docs", handler: asset(PAGE, "text/html; charset=utf-8") },
		{ path: "/docs/swagger-ui.css", handler: asset(css, "text/css; charset=utf-8") },
		{ path: "/docs/swagger-ui-bundle.js", handler: asset(bundle, "text/javascript; charset=utf-8") },
		{ path: "/docs/init.js", handler: asset(INIT, "text/javascript; charset=utf-8") },
	];
}
