// The Worker loads an operation's module on its route's first request, and zod's validation on
// the first request that validates (src/routes.ts, src/http/pipeline.ts). The Workers test pool
// cannot run a dynamic import() inside a request's handler (a known issue of the pool: the
// import does I/O there, and requests that race for one module hang). Loaded here, in each test
// file's own scope before its tests, through the same loaders, no handler imports anything.
// The built Worker, which loads them lazily, is what the end-to-end tests run.
import { routes } from "../src/routes";
import { loadRoutes } from "../src/http/route";
import { loadValidation } from "../src/http/pipeline";

await loadRoutes(routes);
await loadValidation();
