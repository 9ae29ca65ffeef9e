// The Worker loads an operation's module on its route's first request, and zod's validation on
// the first request that validates (src/routes.ts, src/http/pipeline.ts); a Durable Object loads
// its class's implementation with its first call (src/objects.ts). The Workers test pool cannot
// run a dynamic import() inside a request's handler or an object's call (a known issue of the
// pool: the import does I/O there; requests that race for one module hang, and an object whose
// import another one's I/O completes fails as I/O of another object). Loaded here, in each test
// file's own scope before its tests, through the same loaders, which keep what they loaded, no
// handler and no object imports anything. The built Worker, which loads them lazily, is what the
// end-to-end tests run.
import { routes } from "../src/routes";
import { loadRoutes } from "../src/http/route";
import { loadValidation } from "../src/http/pipeline";
import {
	loadAccountObject,
	loadChunkObject,
	loadDeliveryObject,
	loadJobObject,
	loadMoveObject,
	loadStreamObject,
} from "../src/objects";

await loadRoutes(routes);
await loadValidation();
for (const load of [
	loadAccountObject,
	loadDeliveryObject,
	loadStreamObject,
	loadMoveObject,
	loadChunkObject,
	loadJobObject,
])
	await load();
