import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { attemptConfirmation } from "../../src/notifications/attempt";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import {
	consume,
	received,
	receiver,
	recordingQueue,
	storedSubscription,
	subscribeRecording,
} from "../support/webhooks";

afterEach(() => vi.restoreAllMocks());

// An attempt of the first confirmation message is still waiting on a slow receiver when the
// owner resends; it settles afterwards with `status`. Answers the new message's uuid.
async function lateAttemptAfterResend(id: string, status: number) {
	const admin = await bootstrap();
	const { res, job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/ok` });
	const uuid = res.body.subscription.uuid as string;
	let answer!: () => void;
	const answered = new Promise<void>((resolve) => (answer = resolve));
	vi.spyOn(globalThis, "fetch").mockImplementation(async () => {
		await answered;
		return new Response(null, { status });
	});
	const late = attemptConfirmation(env, job, 1);

	const { jobs, binding } = recordingQueue();
	const resent = await call("POST", `/notifications/webhooks/subscriptions/${uuid}/confirmation`, {
		secret: admin.secret,
		env: { WEBHOOKS: binding },
	});
	expect(resent.status).toBe(200);
	answer();
	await late;
	vi.restoreAllMocks();
	return { uuid, job: jobs[0] };
}

describe("a confirmation attempt that settles after a resend", () => {
	it.each([
		["delivered", 200],
		["refused for good", 410],
	])("%s, leaves the subscription pending and the new message still sent", async (_outcome, status) => {
		const id = crypto.randomUUID();
		const { uuid, job } = await lateAttemptAfterResend(id, status);
		const row = await storedSubscription(uuid);
		expect(row).toMatchObject({ status: "pending", delivered_ts: null, message: job.message });

		await consume(job);
		expect((await received(id)).map((m) => JSON.parse(m.body).message)).toEqual([job.message]);
		expect(await storedSubscription(uuid)).toMatchObject({ status: "pending", attempts: 1 });
	});
});
