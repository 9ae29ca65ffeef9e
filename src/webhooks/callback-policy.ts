import ipaddr from "ipaddr.js";

export const MAX_CALLBACK_URL_LENGTH = 512;

// Where the service may send webhook messages. Under "public" (the deployed default) only
// https to hosts that are not loopback, private, link-local, unique-local or otherwise special
// addresses; under "any" (local development) http or https anywhere. Host names are not
// resolved: the Workers runtime has no DNS look-up, and deployed egress reaches only public
// addresses anyway. Returns why a URL is refused, or null.
export function refuseCallbackUrl(text: string, policy: string): string | null {
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		return "Must be an absolute URL";
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") return "Must be an http or https URL";
	if (url.username || url.password) return "Must not carry a user name or password";
	if (policy === "any") return null;

	if (url.protocol !== "https:") return "Must be an https URL";
	// The URL parser has already turned every IPv4 spelling (decimal, octal, hex, short) into
	// dotted form and IPv6 into its canonical form in brackets.
	const host = url.hostname.replace(/\.$/, "").toLowerCase();
	if (host === "localhost" || host.endsWith(".localhost")) return "Must not point at this machine";
	const literal = host.startsWith("[") ? host.slice(1, -1) : host;
	if (!ipaddr.isValid(literal)) return null;
	let address = ipaddr.parse(literal);
	if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
		address = (address as ipaddr.IPv6).toIPv4Address();
	}
	const range = address.range();
	return range === "unicast" ? null : `Must not point at a ${range} address`;
}
