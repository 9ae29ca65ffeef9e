import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";

// A page on any origin may call every route: credentials travel in headers, never cookies.
describe("CORS", () => {
	it("answers a preflight on every route with 204 and what a page may send", async () => {
		for (const path of ["/twins", "/token", `/users/${crypto.randomUUID()}/secrets`, "/no/such/route"]) {
			const res = await call("OPTIONS", path, {
				headers: { origin: "https://app.example", "access-control-request-method": "POST" },
			});
			expect([path, res.status]).toEqual([path, 204]);
			expect(res.headers.get("access-control-allow-origin")).toBe("*");
			expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, PATCH, DELETE");
			expect(res.headers.get("access-control-allow-headers")?.split(", ")).toEqual(
				expect.arrayContaining([
					"authorization",
					"content-type",
					"x-trustedtwin",
					"idempotency-key",
					"if-match",
					"traceparent",
					"last-event-id",
				]),
			);
			expect(res.headers.get("access-control-max-age")).toBe("86400");
		}
	});

	it("lets a page read every answer and its headers, refusals included", async () => {
		const admin = await bootstrap();
		for (const res of [
			await call("GET", "/whoami", { secret: admin.secret }),
			await call("GET", "/whoami"),
			await call("GET", "/nowhere"),
		]) {
			expect(res.headers.get("access-control-allow-origin")).toBe("*");
			expect(res.headers.get("access-control-expose-headers")?.split(", ")).toEqual([
				"x-request-id",
				"server-timing",
				"x-d1-bookmark",
				"idempotent-replayed",
				"etag",
			]);
		}
	});
});
