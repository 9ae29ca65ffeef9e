import { type IRequest, Router } from "itty-router";
import type { Route } from "./route";
import { ApiError } from "../base/errors";
import { pipeline, type RequestState } from "./pipeline";

type Args = [Env, ExecutionContext, RequestState];

// Builds the itty-router from the route table. After it come, for
// every known path, a 405 that names the methods it does take, and last a 404 for the rest.
export function buildRouter(routes: Route[]) {
	const router = Router<IRequest, Args>();
	const methodsByPath = new Map<string, string[]>();
	for (const { method, path, head, load } of routes) {
		router[method.toLowerCase() as "get"](path, pipeline(load, path));
		methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), method]);
		if (head) {
			router.head(path, pipeline(load, path));
			methodsByPath.get(path)!.push("HEAD");
		}
	}
	for (const [path, methods] of methodsByPath) {
		router.all(path, () => {
			throw new ApiError("method_not_allowed", {
				description: `Use ${methods.join(", ")} on this path`,
				headers: { allow: methods.join(", ") },
			});
		});
	}
	router.all("*", () => {
		throw new ApiError("route_not_found");
	});
	return router;
}
