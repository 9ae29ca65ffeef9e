import { describe, expect, it } from "vitest";
import { clientKey } from "../../../src/http/rate-limit";

describe("rate limits per client address", () => {
	it("keys IPv6 clients by their /64", async () => {
		const key = (address: string) => clientKey(new Request("https://x/", { headers: { "cf-connecting-ip": address } }));
		expect(await key("2001:db8:1:2::1")).toBe(await key("2001:db8:1:2:ffff::9"));
		expect(await key("2001:db8:1:2::1")).not.toBe(await key("2001:db8:1:3::1"));
		expect(await key("203.0.113.7")).toBe("203.0.113.7");
		expect(await key("")).toBe("unknown");
	});
});
