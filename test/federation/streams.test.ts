import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret, role } from "../support/accounts";
import { openSocket, openSse, streamPath } from "../streams/helpers";
import { federated, issue, linksPath, signIn, updateProvider } from "./helpers";

// Stream tokens made with a federated or an issued token are bound to what binds that token:
// they open no stream once it is gone (401102), and an open stream closes 4401 when it goes.

const CREDENTIAL = { code: 4401, reason: "The stream's credential ended" };

async function streamToken(secret: string) {
	const res = await call("POST", "/notifications/stream/tokens", { secret, body: {} });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { token: string; validity_ts: number };
}

describe("streams of a federated user", () => {
	it("open with a stream token of a federated token, and not once the link is deleted (401102)", async () => {
		const world = await federated();
		const made = await signIn(world);
		const { token, validity_ts } = await streamToken(made.token);
		expect(validity_ts).toBeLessThanOrEqual(made.validity_ts);
		const sse = await openSse(streamPath("alerts", `access_token=${token}`));
		expect(sse.res.status).toBe(200);
		await sse.close();
		expect(
			(await call("DELETE", linksPath(world.user, world.provider.uuid), { secret: world.admin.secret })).status,
		).toBe(200);
		expectError(await call("GET", streamPath("alerts", `access_token=${token}`)), 401, 401102);
		const socket = await openSocket(streamPath("alerts", `access_token=${token}`));
		expect(socket.res.status).toBe(401);
	});

	it("open no stream once the provider is updated", async () => {
		const world = await federated();
		const { token } = await streamToken((await signIn(world)).token);
		expect((await updateProvider(world.admin, world.provider.uuid, { clock_skew: 1 })).status).toBe(200);
		expectError(await call("GET", streamPath("alerts", `access_token=${token}`)), 401, 401102);
	});

	// Needs the stream object to learn of a link's deletion, as it learns of a secret's.
	it("close 4401 when the link is deleted, by stream token or by the User Token itself", async () => {
		const world = await federated();
		const made = await signIn(world);
		const { token } = await streamToken(made.token);
		const byStreamToken = await openSocket(streamPath("alerts", `access_token=${token}`));
		const byUserToken = await openSocket(streamPath("alerts"), { secret: `Bearer ${made.token}` });
		expect([byStreamToken.res.status, byUserToken.res.status]).toEqual([101, 101]);
		const at = Date.now();
		expect(
			(await call("DELETE", linksPath(world.user, world.provider.uuid), { secret: world.admin.secret })).status,
		).toBe(200);
		for (const socket of [byStreamToken, byUserToken]) {
			expect(await socket.next("the end frame")).toEqual({ event: "end", data: CREDENTIAL });
			expect(await socket.closed).toEqual(CREDENTIAL);
		}
		expect(Date.now() - at).toBeLessThan(2000);
	});
});

describe("streams of an issued token", () => {
	it("open with its stream token until the issuer's secret is deleted, then close 4401", async () => {
		const admin = await bootstrap();
		const issuer = await createUser(admin, await role(admin, { effect: "deny", actions: null }), "issuer");
		const issuerSecret = await issueSecret(admin, issuer);
		const target = await createUser(admin);
		const made = await issue(issuerSecret, target);
		const { token } = await streamToken(made.token);
		const socket = await openSocket(streamPath("alerts", `access_token=${token}`));
		expect(socket.res.status).toBe(101);
		expect((await call("DELETE", `/users/${issuer}/secrets`, { secret: admin.secret })).status).toBe(200);
		expect(await socket.closed).toEqual(CREDENTIAL);
		expectError(await call("GET", streamPath("alerts", `access_token=${token}`)), 401, 401102);
	});
});
