import { ApiError } from "./errors";

// The origin the service's own URLs are built on (webhook confirmation and management links,
// upload and download URLs): the PUBLIC_URL var, never the request's Host header, which the
// caller chooses. Unset or unreadable: 500102, before anything is written.
export function publicOrigin(env: Pick<Env, "PUBLIC_URL">, what = "Webhooks are"): string {
	let url: URL | undefined;
	try {
		url = env.PUBLIC_URL ? new URL(env.PUBLIC_URL) : undefined;
	} catch {
		url = undefined;
	}
	if (!url)
		throw new ApiError("webhooks_unconfigured", { description: `${what} not configured on this server (PUBLIC_URL)` });
	return url.origin;
}
