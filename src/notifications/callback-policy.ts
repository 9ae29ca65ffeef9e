import ipaddr from "ipaddr.js";

export const MAX_CALLBACK_URL_LENGTH = 512;

// Where the service may send webhook messages. Under "public" (the deployed default) only
// https to hosts that are not loopback, private, link-local, unique-local or otherwise special
// addresses; under "any" (local development) http or https anywhere. Host names are not
// resolved: the Workers runtime has no DNS look-up, and deployed egress reaches only public
// addresses anyway.

// The ranges of the IANA IPv4 and IPv6 Special-Purpose Address Registries that are not
// globally reachable, plus multicast. A few global /32s and /48s inside refused blocks
// (192.0.0.9, 192.0.0.10, anycast services in 2001::/23) are refused with their block: no
// webhook receiver lives there.
const IPV4_REFUSED: [string, string][] = [
	["0.0.0.0/8", "this-network"],
	["10.0.0.0/8", "private"],
	["100.64.0.0/10", "shared address space"],
	["127.0.0.0/8", "loopback"],
	["169.254.0.0/16", "link-local"],
	["172.16.0.0/12", "private"],
	["192.0.0.0/24", "IETF protocol assignment"],
	["192.0.2.0/24", "documentation"],
	["192.88.99.0/24", "6to4 relay anycast"],
	["192.168.0.0/16", "private"],
	["198.18.0.0/15", "benchmarking"],
	["198.51.100.0/24", "documentation"],
	["203.0.113.0/24", "documentation"],
	["224.0.0.0/4", "multicast"],
	["255.255.255.255/32", "broadcast"],
	["240.0.0.0/4", "reserved"],
];

// Outside 2000::/3 nothing is global unicast (loopback, unspecified, ::/96 IPv4-compatible,
// discard-only 100::/64, unique-local fc00::/7, link-local fe80::/10, multicast ff00::/8, ...);
// these are the non-global ranges inside it.
const IPV6_REFUSED: [string, string][] = [
	["2001::/23", "IETF protocol assignment (Teredo, benchmarking, ORCHID, ...)"],
	["2001:db8::/32", "documentation"],
	["3fff::/20", "documentation"],
];

// Parsed on the first check rather than at module load: every new isolate loads this module,
// and few ever check a callback URL.
let parsed: ReturnType<typeof parseRanges> | undefined;
const ranges = () => (parsed ??= parseRanges());

function parseRanges() {
	const table = (rows: [string, string][]) => rows.map(([cidr, name]) => ({ range: ipaddr.parseCIDR(cidr), name }));
	return {
		V4: table(IPV4_REFUSED),
		V6: table(IPV6_REFUSED),
		GLOBAL_UNICAST: ipaddr.parseCIDR("2000::/3"),
		// IPv6 forms that carry an IPv4 address: judged by the address they carry.
		MAPPED: ipaddr.parseCIDR("::ffff:0:0/96"),
		NAT64: ipaddr.parseCIDR("64:ff9b::/96"),
		SIX_TO_FOUR: ipaddr.parseCIDR("2002::/16"),
	};
}

function refuseV4(address: ipaddr.IPv4): string | null {
	const hit = ranges().V4.find(({ range }) => address.match(range));
	return hit ? `Must not point at a ${hit.name} address (${address.toString()})` : null;
}

function v4From(bytes: number[]): ipaddr.IPv4 {
	return new ipaddr.IPv4(bytes);
}

function refuseV6(address: ipaddr.IPv6): string | null {
	const { MAPPED, NAT64, SIX_TO_FOUR, GLOBAL_UNICAST, V6 } = ranges();
	const bytes = address.toByteArray();
	if (address.match(MAPPED) || address.match(NAT64)) return refuseV4(v4From(bytes.slice(12, 16)));
	if (address.match(SIX_TO_FOUR)) return refuseV4(v4From(bytes.slice(2, 6)));
	if (!address.match(GLOBAL_UNICAST)) return `Must not point at a non-global IPv6 address (${address.toString()})`;
	const hit = V6.find(({ range }) => address.match(range));
	return hit ? `Must not point at a ${hit.name} address (${address.toString()})` : null;
}

// Why an IP literal is refused under "public", or null; exported for its table-driven tests.
export function refuseAddress(literal: string): string | null {
	// ipaddr.js reads any IPv6 with a dotted tail as IPv4-mapped (`::127.0.0.1` as
	// `::ffff:7f00:1`); the URL parser's canonical form has no dotted tail.
	if (literal.includes(":")) literal = new URL(`https://[${literal}]/`).hostname.slice(1, -1);
	const address = ipaddr.parse(literal);
	return address.kind() === "ipv4" ? refuseV4(address as ipaddr.IPv4) : refuseV6(address as ipaddr.IPv6);
}

// The URL as it is stored and answered (the parser's normalised form), or why it is refused.
export function checkCallbackUrl(text: string, policy: string): { url: string } | { refused: string } {
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		return { refused: "Must be an absolute URL" };
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") return { refused: "Must be an http or https URL" };
	if (url.username || url.password) return { refused: "Must not carry a user name or password" };
	if (url.href.length > MAX_CALLBACK_URL_LENGTH)
		return { refused: `Must be at most ${MAX_CALLBACK_URL_LENGTH} characters` };
	if (policy === "any") return { url: url.href };

	if (url.protocol !== "https:") return { refused: "Must be an https URL" };
	// The URL parser has already turned every IPv4 spelling (decimal, octal, hex, short) into
	// dotted form and IPv6 into its canonical form in brackets.
	const host = url.hostname.replace(/\.$/, "").toLowerCase();
	if (host === "localhost" || host.endsWith(".localhost")) return { refused: "Must not point at this machine" };
	const literal = host.startsWith("[") ? host.slice(1, -1) : host;
	if (!ipaddr.isValid(literal)) return { url: url.href };
	const refused = refuseAddress(literal);
	return refused ? { refused } : { url: url.href };
}

// Why a URL is refused, or null.
export function refuseCallbackUrl(text: string, policy: string): string | null {
	const checked = checkCallbackUrl(text, policy);
	return "refused" in checked ? checked.refused : null;
}
