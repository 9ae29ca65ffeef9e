import { describe, expect, it } from "vitest";
import { checkCallbackUrl, refuseAddress } from "../../../src/notifications/callback-policy";

// Every non-global range of the IANA special-purpose registries, in the spellings a URL can
// give an IP literal; then the public addresses right next to them, which must pass.
const refused = [
	["0.0.0.0", "this-network"],
	["10.1.2.3", "private"],
	["100.64.0.1", "shared"],
	["127.0.0.1", "loopback"],
	["169.254.169.254", "link-local"],
	["172.16.0.1", "private"],
	["192.0.0.8", "IETF"],
	["192.0.2.1", "documentation"],
	["192.88.99.1", "6to4 relay"],
	["192.168.0.1", "private"],
	["198.18.0.1", "benchmarking"],
	["198.19.255.255", "benchmarking"],
	["198.51.100.7", "documentation"],
	["203.0.113.9", "documentation"],
	["224.0.0.251", "multicast"],
	["239.255.255.250", "multicast"],
	["240.0.0.1", "reserved"],
	["255.255.255.255", "broadcast"],
	["::", "non-global"],
	["::1", "non-global"],
	["::127.0.0.1", "non-global"], // IPv4-compatible ::/96
	["::a9fe:a9fe", "non-global"],
	["::8.8.8.8", "non-global"],
	["::ffff:127.0.0.1", "loopback"], // IPv4-mapped
	["::ffff:a9fe:a9fe", "link-local"],
	["::ffff:0:10.0.0.1", "non-global"], // IPv4-translated
	["64:ff9b::10.0.0.1", "private"], // NAT64
	["64:ff9b::7f00:1", "loopback"],
	["64:ff9b:1::8.8.8.8", "non-global"], // local-use NAT64
	["100::1", "non-global"], // discard-only
	["2001::1", "IETF"], // Teredo
	["2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF"],
	["2001:2::1", "IETF"], // benchmarking
	["2001:10::1", "IETF"], // ORCHID
	["2001:db8::1", "documentation"],
	["2002:7f00:1::1", "loopback"], // 6to4 of 127.0.0.1
	["2002:c0a8:101::1", "private"], // 6to4 of 192.168.1.1
	["2002:a9fe:a9fe::", "link-local"],
	["3fff::1", "documentation"],
	["5f00::1", "non-global"], // SRv6 SIDs
	["fc00::1", "non-global"],
	["fd00:ec2::254", "non-global"],
	["fe80::1", "non-global"],
	["fec0::1", "non-global"],
	["ff02::1", "non-global"],
] as const;
const allowed = [
	"8.8.8.8",
	"1.1.1.1",
	"100.128.0.1",
	"172.32.0.1",
	"192.0.1.1",
	"198.20.0.1",
	"223.255.255.255",
	"2606:4700::1111",
	"2a00:1450::1",
	"2001:200::1",
	"64:ff9b::8.8.8.8",
	"2002:808:808::1",
	"::ffff:8.8.8.8",
];

describe("refuseAddress", () => {
	it.each(refused)("refuses %s (%s)", (address, kind) => {
		expect(refuseAddress(address)).toContain(kind);
	});

	it.each(allowed)("accepts %s", (address) => {
		expect(refuseAddress(address)).toBeNull();
	});
});

describe("checkCallbackUrl under the public policy", () => {
	it.each([
		"https://[::127.0.0.1]/",
		"https://[::a9fe:a9fe]/",
		"https://[0:0:0:0:0:0:127.0.0.1]/",
		"https://[::ffff:7f00:1]/",
		"https://[64:ff9b::a00:1]/",
		"https://[2002:7f00:0001::]/",
		"https://0x7f000001/",
		"https://017700000001/",
		"https://169.254.43518/",
		"https://[fe80::1%25eth0]/",
	])("refuses %s, however it is spelled", (url) => {
		expect(checkCallbackUrl(url, "public")).toEqual({ refused: expect.stringMatching(/^Must/) });
	});

	it("answers the normalised URL", () => {
		expect(checkCallbackUrl("HTTPS://Example.COM:443/a/../hook?x=1#frag", "public")).toEqual({
			url: "https://example.com/hook?x=1#frag",
		});
		expect(checkCallbackUrl("https://[2606:4700:0:0::1111]/", "public")).toEqual({ url: "https://[2606:4700::1111]/" });
	});
});
