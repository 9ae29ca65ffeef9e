import { now } from "../base/time";
import { attemptConfirmation, attemptNotification, type Settlement } from "./attempt";
import type { WebhookJob } from "./jobs";
import { DELIVERY_TIMEOUT_MS } from "./post";
import { RETRY_SCHEDULE, retryDelay, windowLeft } from "./retry-schedule";

// How long the queue consumer waits for an attempt before leaving it to this object. A queue
// invocation ends only when its slowest message does, and the next batch waits for it (the
// local queue runs one batch at a time, and the platform adds consumers only as a backlog
// grows), so an attempt that is not over by then must not keep the batch.
export const HANDOVER_MS = 2000;

// When the queue delivers a message again whose attempt is still running here: by then the
// attempt has ended (it gives up after DELIVERY_TIMEOUT_MS), and its settlement waits.
export const WAIT_SECONDS = Math.ceil(DELIVERY_TIMEOUT_MS / 1000) + 5;

// What the object keeps of its message between the queue's deliveries: how many attempts were
// made (an attempt counts once started, so one lost with the object is not made twice under
// one number), and the settlement of an attempt that outlasted the consumer's wait, which the
// queue's next delivery takes.
type State = { made: number; settled?: { settlement: Settlement; at: number } };
const STATE = "state";
// An object from before kept an attempt it had taken over from the queue here, for its alarm.
const LEGACY_PENDING = "pending";

// An attempt that failed on our side (D1, the configuration), not the receiver's, settles as a
// retry on the schedule's next delay: the object never rejects a call, so nothing is lost on
// the way back to the consumer.
async function attemptJob(env: Env, job: WebhookJob, attempt: number): Promise<Settlement> {
	try {
		return await (job.kind === "notification"
			? attemptNotification(env, job, attempt)
			: attemptConfirmation(env, job, attempt));
	} catch (error) {
		console.error(JSON.stringify({ delivery: job.message, attempt, error: String(error) }));
		return { action: "retry", delay: retryDelay(attempt, null, windowLeft(job.since, now())) ?? RETRY_SCHEDULE[0] };
	}
}

// One object per message (named by its uuid): it makes that message's attempts, one at a time,
// and numbers them. The queue owns every retry (docs/notifications.md "Webhooks"): each
// delivery of the message asks this object for a settlement, and the consumer acknowledges,
// retries with the answered delay, or dead-letters. An attempt still running when the consumer
// stops waiting goes on here; the consumer retries the message after WAIT_SECONDS, and that
// delivery takes the attempt's settlement, so a hanging receiver holds up nobody else.
export class DeliveryObject {
	// The attempt running in this object now, if any.
	private running?: Promise<Settlement>;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {}

	async run(job: WebhookJob): Promise<Settlement> {
		const stored = await this.ctx.storage.get<State>(STATE);
		// A job handed back to the queue says how many attempts came before it.
		const state: State = { ...stored, made: Math.max(stored?.made ?? 0, job.after ?? 0) };
		// The settlement of an attempt that outlasted the consumer's wait: the queue takes it now.
		if (state.settled) {
			const { settlement, at } = state.settled;
			const left = settlement.action === "retry" ? Math.ceil(at + settlement.delay - now()) : 0;
			if (left >= 1) return { action: "retry", delay: left };
			await this.ctx.storage.put<State>(STATE, { made: state.made });
			if (settlement.action !== "retry") return settlement;
		}
		// An attempt still running here (the queue delivered the message again, or twice).
		if (this.running) return { action: "retry", delay: WAIT_SECONDS };
		const attempt = state.made + 1;
		await this.ctx.storage.put<State>(STATE, { made: attempt });
		const running = attemptJob(this.env, job, attempt);
		this.running = running;
		let timeout: ReturnType<typeof setTimeout> | null = null;
		const waited = new Promise<"outlasted">((resolve) => {
			timeout = setTimeout(() => resolve("outlasted"), HANDOVER_MS);
		});
		const answer = await Promise.race([running, waited]).finally(() => clearTimeout(timeout));
		if (answer !== "outlasted") {
			this.running = undefined;
			return answer;
		}
		// Kept for the queue's next delivery of the message, WAIT_SECONDS from now.
		void running
			.then(async (settlement) => {
				this.running = undefined;
				await this.ctx.storage.put<State>(STATE, { made: attempt, settled: { settlement, at: now() } });
			})
			// Lost, the settlement is an attempt lost with the object: the next delivery makes the next.
			.catch((error) => console.error(JSON.stringify({ delivery: job.message, attempt, error: String(error) })));
		return { action: "retry", delay: WAIT_SECONDS };
	}

	// An object from before the queue owned every retry may hold an attempt it took over, with
	// an alarm for it: the job goes back to the queue, which owns it from then on.
	async alarm() {
		const pending = await this.ctx.storage.get<{ job: WebhookJob; attempt: number }>(LEGACY_PENDING);
		if (!pending) return;
		await this.env.WEBHOOKS.send({ ...pending.job, after: pending.attempt - 1 });
		await this.ctx.storage.delete(LEGACY_PENDING);
	}
}
