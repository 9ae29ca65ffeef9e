import { env } from "cloudflare:workers";
import { idOf } from "../support/shards";
import { describe, expect, it } from "vitest";
import { signStreamToken } from "../../src/base/stream-token";
import { call, expectError, fingerprint } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret, userWith, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { openSocket, openSse, publish, streamPath } from "./helpers";

// Who may open a stream, checked in this order before any upgrade or body byte: credential,
// statement, query, a confined role, another account's grant, then the limits. Every refusal is
// the JSON envelope, over either transport. Stream tokens are the credential of this route only.

async function streamToken(secret: string, body: Record<string, unknown> = {}) {
	const res = await call("POST", "/notifications/stream/tokens", { secret, body });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { token: string; validity_ts: number };
}

const grant = (publisher: Account, grantee: Account, topics: string[]) =>
	call("PATCH", `/notifications/webhooks/access/accounts/${grantee.account}`, {
		secret: publisher.secret,
		body: { topics },
	});

describe("opening a stream", () => {
	it("refuses a missing, unknown or expired credential (401), before anything else", async () => {
		const admin = await bootstrap();
		expectError(await call("GET", streamPath("alerts")), 401, 401101);
		expectError(await call("GET", streamPath("alerts"), { secret: "x".repeat(64) }), 401, 401102);
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		expect(
			(
				await call("PATCH", `/users/${user}/secrets`, {
					secret: admin.secret,
					body: { validity_ts: Date.now() / 1000 - 1 },
				})
			).status,
		).toBe(200);
		expectError(await call("GET", streamPath("alerts", "bogus=1")), 401, 401101);
		const expired = await openSocket(streamPath("alerts"), { secret });
		expect(expired.ws).toBeNull();
		expect(expired.res.status).toBe(401);
		expect(await expired.res.json()).toMatchObject({ subcode: 401103 });
	});

	it("refuses a role whose statement lacks stream_notifications (403101) before reading the query", async () => {
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "allow", actions: ["who_am_i"] });
		expectError(await call("GET", streamPath("alerts")), 401, 401101);
		expectError(await call("GET", streamPath("alerts"), { secret: reader.secret }), 403, 403101);
		expectError(await call("GET", "/notifications/stream?bogus=1", { secret: reader.secret }), 403, 403101);
		const denied = await userWith(admin, { effect: "deny", actions: ["stream_notifications"] });
		expectError(await call("GET", streamPath("alerts"), { secret: denied.secret }), 403, 403101);
		// The default statement (deny nothing) allows both new operations at once.
		expect((await call("POST", "/notifications/stream/tokens", { secret: admin.secret, body: {} })).status).toBe(201);
	});

	it("refuses bad query parameters (400101) before the role's rules", async () => {
		const admin = await bootstrap();
		const confined = await userWithRules(admin, { twin: "TWIN.site == 'north'" });
		const nine = Array.from({ length: 9 }, (_, i) => `topic-${i}`).join(",");
		for (const query of [
			"",
			"topics=",
			"topics=ab",
			`topics=${nine}`,
			"topics=a%20b",
			"topics=alerts&bogus=1",
			"topics=alerts&account=nope",
			"topics=alerts&since=x",
		]) {
			for (const who of [admin, confined]) {
				const res = await call("GET", `/notifications/stream?${query}`, { secret: who.secret });
				expect([query, res.status, res.body.subcode]).toEqual([query, 400, 400101]);
			}
		}
		// Eight topics, repeats dropped, are fine.
		const eight = [...Array.from({ length: 8 }, (_, i) => `topic-${i}`), "topic-0"].join(",");
		const stream = await openSse(streamPath(eight), { secret: admin.secret });
		expect(stream.res.status).toBe(200);
		await stream.close();
	});

	it("opens for a role with a twin, an entry or an identity rule (what it is sent is filter.test.ts's)", async () => {
		const admin = await bootstrap();
		for (const rules of [{ twin: "true" }, { entry: "true" }, { identity: "true" }]) {
			const confined = await userWithRules(admin, rules);
			const stream = await openSocket(streamPath("alerts"), { secret: confined.secret });
			expect(stream.res.status).toBe(101);
		}
	});

	it("reads another account's topics only with its grant of every one (403104), the absent account answering alike", async () => {
		const publisher = await bootstrap();
		const reader = await bootstrap();
		const twin = await newTwin(publisher.secret);
		expect((await grant(publisher, reader, ["granted"])).status).toBe(200);
		const of = (account: string, topics: string) =>
			call("GET", streamPath(topics, `account=${account}`), { secret: reader.secret });
		expectError(await of(publisher.account, "other"), 403, 403104);
		expectError(await of(publisher.account, "granted,other"), 403, 403104);
		// A publisher granting nothing, a partial grant and an account that exists nowhere (in the
		// same bucket, whose database the grant is read in) cost and look the same, Server-Timing
		// included.
		const alike = async (account: string) => {
			const nowhere = idOf(account);
			const absent = fingerprint(await of(nowhere, "granted,other"));
			const swap = (text: string) => text.replaceAll(account, nowhere);
			expect(fingerprint(await of(account, "granted,other"), swap)).toEqual(absent);
		};
		await alike(publisher.account);
		await alike((await bootstrap()).account);

		// Granted: the publisher's messages, live.
		const stream = await openSocket(streamPath("granted", `account=${publisher.account}`), { secret: reader.secret });
		expect(stream.res.status).toBe(101);
		await publish(publisher.secret, twin, "shared", 1, ["granted", "other"]);
		expect(await stream.next()).toMatchObject({
			id: "1",
			data: { topic: "granted", account: publisher.account, twin },
		});
		expect(stream.pending).toEqual([]);
	});

	it("refuses the account's stream past MAX_STREAMS on one publisher (409191), naming it", async () => {
		const admin = await bootstrap();
		const other = await userWith(admin, { effect: "deny", actions: null });
		const limited = { MAX_STREAMS: "2" };
		const a = await openSocket(streamPath("alerts"), { secret: admin.secret, env: limited });
		const b = await openSse(streamPath("alerts"), { secret: other.secret, env: limited });
		expect([a.res.status, b.res.status]).toEqual([101, 200]);
		const refused = await call("GET", streamPath("alerts"), { secret: other.secret, env: limited });
		expectError(refused, 409, 409191);
		expect(refused.body.description).toContain("MAX_STREAMS");
		const overSocket = await openSocket(streamPath("alerts"), { secret: admin.secret, env: limited });
		expect([overSocket.res.status, overSocket.ws]).toEqual([409, null]);
		// Another account's streams on its own topics are counted apart.
		const stranger = await bootstrap();
		expect((await openSocket(streamPath("alerts"), { secret: stranger.secret, env: limited })).res.status).toBe(101);
		await b.close();
	});

	it("lets a user hold 10 streams per publisher: the 11th closes its oldest (4409)", async () => {
		const admin = await bootstrap();
		const oldest = await openSse(streamPath("alerts"), { secret: admin.secret });
		const others = [];
		for (let i = 0; i < 9; i++) others.push(await openSocket(streamPath("alerts"), { secret: admin.secret }));
		const eleventh = await openSocket(streamPath("alerts"), { secret: admin.secret });
		expect(eleventh.res.status).toBe(101);
		expect(await oldest.event("the end event")).toEqual({
			event: "end",
			data: { code: 4409, reason: "Replaced by the user's newer stream" },
		});
		await oldest.done;
		expect(oldest.ended).toBe(true);
		const twelfth = await openSocket(streamPath("alerts"), { secret: admin.secret });
		expect(twelfth.res.status).toBe(101);
		expect(await others[0].closed).toEqual({ code: 4409, reason: "Replaced by the user's newer stream" });
		expect(await others[0].next("the end frame")).toEqual({
			event: "end",
			data: { code: 4409, reason: "Replaced by the user's newer stream" },
		});
	});

	it("answers any other method with 405", async () => {
		const admin = await bootstrap();
		const res = await call("POST", streamPath("alerts"), { secret: admin.secret });
		expectError(res, 405, 405101);
		expect(res.headers.get("allow")).toBe("GET");
	});
});

describe("stream tokens", () => {
	it("are made for an hour by default, 60 s to a day, never outliving the credential", async () => {
		const admin = await bootstrap();
		const made = await streamToken(admin.secret);
		expect(Object.keys(made)).toEqual(["token", "validity_ts"]);
		expect(made.token).toMatch(/^[A-Za-z0-9._-]+$/);
		expect(Math.abs(made.validity_ts - (Date.now() / 1000 + 3600))).toBeLessThan(60);
		expect(
			Math.abs((await streamToken(admin.secret, { expires: 60 })).validity_ts - (Date.now() / 1000 + 60)),
		).toBeLessThan(30);
		for (const expires of [59, 86_401, 1.5, "60", null]) {
			expectError(
				await call("POST", "/notifications/stream/tokens", { secret: admin.secret, body: { expires } }),
				400,
				400101,
			);
		}
		expectError(
			await call("POST", "/notifications/stream/tokens", { secret: admin.secret, body: { scope: "x" } }),
			400,
			400101,
		);
		// Bounded by the secret's validity...
		const user = await createUser(admin);
		const ending = Math.round(Date.now() / 1000 + 600);
		const secret = await issueSecret(admin, user, ending);
		expect((await streamToken(secret)).validity_ts).toBe(ending);
		// ...and by a User Token's expiry.
		const exp = Math.round(Date.now() / 1000 + 300);
		const userToken = (await call("POST", "/token", { secret: admin.secret, body: { validity_ts: exp } })).body.token;
		expect((await streamToken(`Bearer ${userToken}`)).validity_ts).toBe(exp);
	});

	it("are refused as the stream would refuse the credential alone: its statement (403101); a confined role gets one", async () => {
		const admin = await bootstrap();
		const tokensOnly = await userWith(admin, { effect: "allow", actions: ["create_stream_token"] });
		const res = await call("POST", "/notifications/stream/tokens", { secret: tokensOnly.secret, body: {} });
		expectError(res, 403, 403101);
		expect(res.body.description).toContain("stream_notifications");
		const noTokens = await userWith(admin, { effect: "deny", actions: ["stream_notifications"] });
		expectError(await call("POST", "/notifications/stream/tokens", { secret: noTokens.secret, body: {} }), 403, 403101);
		// What the stream itself answers the same callers.
		expectError(await call("GET", streamPath("alerts"), { secret: noTokens.secret }), 403, 403101);
		const driver = await userWithRules(admin, { twin: "TWIN.driver == user" });
		const { token } = await streamToken(driver.secret);
		expect((await openSocket(streamPath("alerts", `access_token=${token}`))).res.status).toBe(101);
		// Both allowed: a token.
		const both = await userWith(admin, { effect: "allow", actions: ["create_stream_token", "stream_notifications"] });
		await streamToken(both.secret);
	});

	it("open a stream in access_token, over SSE or a WebSocket, as their user", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const { token } = await streamToken(admin.secret);
		const sse = await openSse(streamPath("alerts", `access_token=${token}`));
		const socket = await openSocket(streamPath("alerts", `access_token=${token}`));
		expect([sse.res.status, socket.res.status]).toEqual([200, 101]);
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		expect((await sse.event()).data.account).toBe(admin.account);
		expect((await socket.next()).data.account).toBe(admin.account);
		await sse.close();
	});

	it("are an unknown credential anywhere else, and refused beside a header", async () => {
		const admin = await bootstrap();
		const { token } = await streamToken(admin.secret);
		expectError(await call("GET", streamPath("alerts"), { secret: token }), 401, 401102);
		expectError(await call("GET", streamPath("alerts"), { secret: `Bearer ${token}` }), 401, 401102);
		expectError(await call("GET", "/whoami", { secret: token }), 401, 401102);
		// Another route does not read the parameter: a credential is still missing, or the
		// parameter is one it does not take.
		expectError(await call("GET", `/twins?access_token=${token}`), 401, 401101);
		expectError(await call("GET", `/twins?access_token=${token}`, { secret: admin.secret }), 400, 400101);
		const both = await call("GET", streamPath("alerts", `access_token=${token}`), { secret: admin.secret });
		expectError(both, 400, 400101);
		expect(both.body.details).toEqual([{ path: "access_token", message: expect.any(String) }]);
	});

	it("refuse a forged or expired token, and die with the secret that made them", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		const { token } = await streamToken(secret);
		const open = (t: string) => call("GET", streamPath("alerts", `access_token=${encodeURIComponent(t)}`));
		const mac = token.split(".")[5];
		const forged = `${token.slice(0, -mac.length)}${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
		for (const bad of [forged, token.replace(user, admin.user), "a.b.c.d.e.f", "x".repeat(300)]) {
			const res = await open(bad);
			expect([bad, res.status, res.body.subcode]).toEqual([bad, 401, 401102]);
		}
		// A forgery reads nothing in D1.
		expect((await open(forged)).headers.get("server-timing")).toContain("queries=0");
		// Signed, but past its validity.
		const [account, , created] = token.split(".");
		const expired = await signStreamToken(env.WEBHOOK_KEY, {
			account,
			user,
			binding: { kind: "secret", created_ts: Number(created) / 1000 },
			validityMs: Date.now() - 1000,
			dict: null,
		});
		expectError(await open(expired!), 401, 401103);
		// The secret replaced by a redeemed PIN: the token is dead.
		const working = await openSse(streamPath("alerts", `access_token=${token}`));
		expect(working.res.status).toBe(200);
		await working.close();
		await issueSecret(admin, user);
		expectError(await open(token), 401, 401102);
		// Deleted.
		const other = await createUser(admin);
		const otherToken = (await streamToken(await issueSecret(admin, other))).token;
		expect((await call("DELETE", `/users/${other}/secrets`, { secret: admin.secret })).status).toBe(200);
		expectError(await open(otherToken), 401, 401102);
	});
});
