import { describe, expect, it } from "vitest";
import { bootstrap, call } from "./helpers";

describe("smoke", () => {
	it("bootstraps and who_am_i", async () => {
		const admin = await bootstrap();
		const res = await call("GET", "/whoami", { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ account: admin.account, user: admin.user, role: admin.role });
	});
});
