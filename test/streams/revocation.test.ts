import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { signStreamToken } from "../../src/base/stream-token";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret, member, role } from "../support/accounts";
import { newTwin } from "../support/twins";
import { inStreamObject, openSocket, openSse, publish, streamPath } from "./helpers";
import { dbOf } from "../support/shards";

// A stream ends when its credential ends (4401) or its permission changes (4403), within 2 s:
// an SSE stream with an `end` event and the end of its body, a WebSocket with an `end` frame and
// a close frame carrying the code. The changes that end it answer only once it has ended.

const CREDENTIAL = { code: 4401, reason: "The stream's credential ended" };
const PERMISSION = { code: 4403, reason: "The stream's permission ended" };

type Sse = Awaited<ReturnType<typeof openSse>>;
type Socket = Awaited<ReturnType<typeof openSocket>>;

async function expectEnded(stream: Sse | Socket, ended: { code: number; reason: string }, since: number) {
	if ("closed" in stream) {
		expect(await stream.next("the end frame")).toEqual({ event: "end", data: ended });
		expect(await stream.closed).toEqual(ended);
	} else {
		expect(await stream.event("the end event")).toEqual({ event: "end", data: ended });
		await stream.done;
		expect(stream.ended).toBe(true);
	}
	expect(Date.now() - since).toBeLessThan(2000);
}

// A user of `admin`'s account with the default role and a secret, streaming over both transports.
async function streaming(admin: Account, user?: Account, query = "") {
	const who = user ?? { ...admin, ...(await withSecret(admin)) };
	const sse = await openSse(streamPath("alerts", query), { secret: who.secret });
	const socket = await openSocket(streamPath("alerts", query), { secret: who.secret });
	expect([sse.res.status, socket.res.status]).toEqual([200, 101]);
	return { who, sse, socket };
}

async function withSecret(admin: Account) {
	const user = await createUser(admin);
	return { user, secret: await issueSecret(admin, user) };
}

describe("a stream's credential ending", () => {
	it("closes it with 4401 when the secret is deleted", async () => {
		const admin = await bootstrap();
		const { who, sse, socket } = await streaming(admin);
		const at = Date.now();
		expect((await call("DELETE", `/users/${who.user}/secrets`, { secret: admin.secret })).status).toBe(200);
		await expectEnded(sse, CREDENTIAL, at);
		await expectEnded(socket, CREDENTIAL, at);
	});

	it("closes it when a redeemed PIN replaces the secret", async () => {
		const admin = await bootstrap();
		const { who, sse, socket } = await streaming(admin);
		const at = Date.now();
		await issueSecret(admin, who.user);
		await expectEnded(sse, CREDENTIAL, at);
		await expectEnded(socket, CREDENTIAL, at);
	});

	it("closes it when the user is deleted", async () => {
		const admin = await bootstrap();
		const { who, sse, socket } = await streaming(admin);
		const at = Date.now();
		expect((await call("DELETE", `/users/${who.user}`, { secret: admin.secret })).status).toBe(200);
		await expectEnded(sse, CREDENTIAL, at);
		await expectEnded(socket, CREDENTIAL, at);
	});

	it("closes it when the secret's validity is set in the past, and at a later validity when it comes", async () => {
		const admin = await bootstrap();
		const { who, sse, socket } = await streaming(admin);
		let at = Date.now();
		expect(
			(
				await call("PATCH", `/users/${who.user}/secrets`, {
					secret: admin.secret,
					body: { validity_ts: at / 1000 - 1 },
				})
			).status,
		).toBe(200);
		await expectEnded(sse, CREDENTIAL, at);
		await expectEnded(socket, CREDENTIAL, at);

		const other = await streaming(admin);
		const soon = Date.now() / 1000 + 1.5;
		expect(
			(await call("PATCH", `/users/${other.who.user}/secrets`, { secret: admin.secret, body: { validity_ts: soon } }))
				.status,
		).toBe(200);
		// Still open until then: an event written now arrives.
		const twin = await newTwin(admin.secret);
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		expect((await other.socket.next()).event).toBe("ledger.entry.added");
		expect((await other.sse.event()).event).toBe("ledger.entry.added");
		at = soon * 1000;
		await expectEnded(other.socket, CREDENTIAL, at);
		await expectEnded(other.sse, CREDENTIAL, at);
		expect(Date.now()).toBeGreaterThanOrEqual(soon * 1000);
	});

	it("closes a User Token's stream at the token's expiry, and a stream token's at its validity", async () => {
		const admin = await bootstrap();
		const exp = Math.round(Date.now() / 1000 + 1.5);
		const token = (await call("POST", "/token", { secret: admin.secret, body: { validity_ts: exp } })).body.token;
		const byToken = await openSocket(streamPath("alerts"), { secret: `Bearer ${token}` });
		const secret = await call("GET", `/users/${admin.user}/secrets`, { secret: admin.secret });
		const streamToken = await signStreamToken(env.WEBHOOK_KEY, {
			account: admin.account,
			user: admin.user,
			binding: { kind: "secret", created_ts: secret.body.created_ts },
			validityMs: exp * 1000,
			dict: null,
		});
		const byStreamToken = await openSse(streamPath("alerts", `access_token=${streamToken}`));
		expect([byToken.res.status, byStreamToken.res.status]).toEqual([101, 200]);
		await expectEnded(byToken, CREDENTIAL, exp * 1000);
		await expectEnded(byStreamToken, CREDENTIAL, exp * 1000);
	});
});

describe("a stream's permission changing", () => {
	it("closes it with 4403 when the user gets a role that may not stream, not one that may", async () => {
		const admin = await bootstrap();
		const { who, sse, socket } = await streaming(admin);
		expect(
			(await call("PATCH", `/users/${who.user}`, { secret: admin.secret, body: { name: "renamed", role: admin.role } }))
				.status,
		).toBe(200);
		// Another role that streams: the streams stay (and read as the new role: filter.test.ts).
		const other = await role(admin, { effect: "deny", actions: null });
		expect((await call("PATCH", `/users/${who.user}`, { secret: admin.secret, body: { role: other } })).status).toBe(
			200,
		);
		const silent = await role(admin, { effect: "deny", actions: ["stream_notifications"] });
		const at = Date.now();
		expect((await call("PATCH", `/users/${who.user}`, { secret: admin.secret, body: { role: silent } })).status).toBe(
			200,
		);
		await expectEnded(sse, PERMISSION, at);
		await expectEnded(socket, PERMISSION, at);
		// Renaming and the first role change did not end them: the first thing each received is the end.
		expect(sse.text).toBe(`retry: 2000\n\nevent: end\ndata: ${JSON.stringify(PERMISSION)}\n\n`);
	});

	it("closes its holders' streams when the role's statement stops allowing them, not on its name, rules or other actions", async () => {
		const admin = await bootstrap();
		const streamer = await role(admin, { effect: "deny", actions: null });
		const holder = await member(admin, streamer);
		const { sse, socket } = await streaming(admin, holder);
		const bystander = await streaming(admin);
		expect(
			(await call("PATCH", `/roles/${streamer}`, { secret: admin.secret, body: { name: "still streaming" } })).status,
		).toBe(200);
		expect(
			(
				await call("PATCH", `/roles/${streamer}`, {
					secret: admin.secret,
					body: { statement: { effect: "deny", actions: ["get_log"] } },
				})
			).status,
		).toBe(200);
		expect(
			(
				await call("PATCH", `/roles/${streamer}`, {
					secret: admin.secret,
					body: { rules: { twin: "true", entry: null, identity: null } },
				})
			).status,
		).toBe(200);
		const at = Date.now();
		expect(
			(
				await call("PATCH", `/roles/${streamer}`, {
					secret: admin.secret,
					body: { statement: { effect: "deny", actions: ["stream_notifications"] } },
				})
			).status,
		).toBe(200);
		await expectEnded(sse, PERMISSION, at);
		await expectEnded(socket, PERMISSION, at);
		expect(sse.text).toBe(`retry: 2000\n\nevent: end\ndata: ${JSON.stringify(PERMISSION)}\n\n`);
		// Another role's holder streams on.
		const twin = await newTwin(admin.secret);
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		expect((await bystander.socket.next()).event).toBe("ledger.entry.added");
		await bystander.sse.close();
	});

	it("closes another account's streams on a topic whose grant is revoked, not those still granted", async () => {
		const publisher = await bootstrap();
		const reader = await bootstrap();
		const grant = (topics: string[]) =>
			call("PATCH", `/notifications/webhooks/access/accounts/${reader.account}`, {
				secret: publisher.secret,
				body: { topics },
			});
		expect((await grant(["alerts", "status"])).status).toBe(200);
		const query = `account=${publisher.account}`;
		const alerts = await openSocket(streamPath("alerts", query), { secret: reader.secret });
		const status = await openSse(streamPath("status", query), { secret: reader.secret });
		const at = Date.now();
		expect((await grant(["alerts"])).status).toBe(200);
		await expectEnded(status, PERMISSION, at);
		const twin = await newTwin(publisher.secret);
		await publish(publisher.secret, twin, "n", 1, ["alerts"]);
		expect(await alerts.next()).toMatchObject({ event: "ledger.entry.added", data: { account: publisher.account } });
		expect((await grant([])).status).toBe(200);
		await expectEnded(alerts, PERMISSION, Date.now());
	});

	it("reaches the streams a user holds on another account's object", async () => {
		const publisher = await bootstrap();
		const reader = await bootstrap();
		const grant = { topics: ["alerts"] };
		expect(
			(
				await call("PATCH", `/notifications/webhooks/access/accounts/${reader.account}`, {
					secret: publisher.secret,
					body: grant,
				})
			).status,
		).toBe(200);
		const user = { ...reader, ...(await withSecret(reader)) };
		const foreign = await streaming(reader, user, `account=${publisher.account}`);
		const own = await openSocket(streamPath("alerts"), { secret: user.secret });
		const at = Date.now();
		expect((await call("DELETE", `/users/${user.user}/secrets`, { secret: reader.secret })).status).toBe(200);
		await expectEnded(foreign.sse, CREDENTIAL, at);
		await expectEnded(foreign.socket, CREDENTIAL, at);
		await expectEnded(own, CREDENTIAL, at);
		// With none of its streams left there, the reader's object forgets the publisher's.
		const known = await inStreamObject(reader.account, (_, state) =>
			state.storage.sql.exec("SELECT account FROM publishers").toArray(),
		);
		expect(known).toEqual([]);
	});
});

describe("a change that races the opening of a stream", () => {
	it("is caught by the credential read again once the stream is registered: refused, and the object forgets it", async () => {
		const admin = await bootstrap();
		const { user, secret } = await withSecret(admin);
		// The secret is deleted after the Worker checked it and before the object registers the
		// stream: the deletion's own call to the streams found none to end.
		const racing = {
			getByName(name: string) {
				const stub = env.STREAMS.getByName(name);
				return {
					fetch: async (...args: Parameters<typeof stub.fetch>) => {
						await dbOf(user).prepare("DELETE FROM user_secrets WHERE user = ?").bind(user).run();
						return stub.fetch(...args);
					},
				};
			},
		};
		const res = await openSocket(streamPath("alerts"), { secret, env: { STREAMS: racing } });
		expect([res.res.status, res.ws]).toEqual([401, null]);
		expect(await res.res.json()).toMatchObject({ subcode: 401102 });
		await expect
			.poll(() =>
				inStreamObject(
					admin.account,
					(_, state) => state.getWebSockets(`user:${user}`).filter((ws) => ws.readyState === WebSocket.OPEN).length,
				),
			)
			.toBe(0);
	});

	it("registers again, once, a caller whose role changed meanwhile and may still stream", async () => {
		const admin = await bootstrap();
		const first = await role(admin, { effect: "deny", actions: null }, {}, "first");
		const second = await role(admin, { effect: "deny", actions: null }, {}, "second");
		const holder = await member(admin, first);
		let raced = false;
		const racing = {
			getByName(name: string) {
				const stub = env.STREAMS.getByName(name);
				return {
					fetch: async (...args: Parameters<typeof stub.fetch>) => {
						if (!raced)
							await dbOf(holder.user)
								.prepare("UPDATE users SET role = ? WHERE uuid = ?")
								.bind(second, holder.user)
								.run();
						raced = true;
						return stub.fetch(...args);
					},
				};
			},
		};
		const stream = await openSocket(streamPath("alerts"), { secret: holder.secret, env: { STREAMS: racing } });
		expect(stream.res.status).toBe(101);
		// Registered under the role it holds now: changing that role ends it.
		const at = Date.now();
		expect(
			(
				await call("PATCH", `/roles/${second}`, {
					secret: admin.secret,
					body: { statement: { effect: "deny", actions: ["stream_notifications"] } },
				})
			).status,
		).toBe(200);
		await expectEnded(stream, PERMISSION, at);
	});
});

describe("a refused stream", () => {
	it("answers before any upgrade: a WebSocket client sees the status and the envelope", async () => {
		const admin = await bootstrap();
		const silent = await member(admin, await role(admin, { effect: "deny", actions: ["stream_notifications"] }));
		const res = await openSocket(streamPath("alerts"), { secret: silent.secret });
		expect([res.res.status, res.ws]).toEqual([403, null]);
		const body = (await res.res.json()) as { subcode: number; trace: string };
		expectError({ status: res.res.status, headers: res.res.headers, body }, 403, 403101);
	});
});
