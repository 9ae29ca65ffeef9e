import { type Settlement, attemptConfirmation, attemptNotification } from "./attempt";
import type { WebhookJob } from "./jobs";
import { DELIVERY_TIMEOUT_MS } from "./post";
import { RETRY_SCHEDULE, retryDelay, windowLeft } from "./retry-schedule";
import { now } from "../base/time";

// How long the queue consumer waits for an attempt before leaving it to this object. A queue
// invocation ends only when its slowest message does, and the next batch waits for it (the
// local queue runs one batch at a time, and the platform adds consumers only as a backlog
// grows), so an attempt that is not over by then must not keep the batch.
export const HANDOVER_MS = 2000;

type Pending = { job: WebhookJob; attempt: number };

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

// One object per message (named by its uuid). It runs that message's attempts; an attempt
// still running when the consumer stops waiting is finished here, and this object queues what
// follows it, as the consumer would have.
export class DeliveryObject {
	private current?: { attempt: number; result: Promise<Settlement>; handedOver: boolean };

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {}

	// Runs attempt `attempt` (or joins it if it is already running) and answers its settlement,
	// or "handed-over" if it is still running after HANDOVER_MS: from then on, it is this
	// object's to settle.
	async run(job: WebhookJob, attempt: number): Promise<Settlement | "handed-over"> {
		// The same attempt again (the queue may deliver a message twice) joins the running one.
		if (this.current?.attempt !== attempt) {
			const result = attemptJob(this.env, job, attempt);
			const current = { attempt, result, handedOver: false };
			this.current = current;
			// Runs after run() below has marked a lost race: the timer's win and the mark happen in
			// one turn, before the attempt's I/O can settle it.
			result.then(
				(settlement) => {
					if (current.handedOver) return this.follow({ job, attempt }, settlement);
				},
				() => undefined,
			);
		}
		if (this.current.handedOver) return "handed-over";
		const current = this.current;
		let timeout: ReturnType<typeof setTimeout> | null = null;
		const timer = new Promise<"handed-over">((resolve) => {
			timeout = setTimeout(() => resolve("handed-over"), HANDOVER_MS);
		});
		const answer = await Promise.race([current.result, timer]).finally(() =>
			clearTimeout(timeout as ReturnType<typeof setTimeout>),
		);
		if (answer === "handed-over") {
			current.handedOver = true;
			// If this object goes away before the attempt ends, the alarm makes another one.
			await this.ctx.storage.put<Pending>("pending", { job, attempt });
			await this.ctx.storage.setAlarm(Date.now() + DELIVERY_TIMEOUT_MS + 60_000);
		}
		return answer;
	}

	async alarm() {
		const pending = await this.ctx.storage.get<Pending>("pending");
		if (!pending) return;
		this.current = undefined;
		await this.follow(pending, await attemptJob(this.env, pending.job, pending.attempt));
	}

	// What the consumer does with a settled message, done with a new queue message instead.
	private async follow(pending: Pending, settlement: Settlement) {
		const { job, attempt } = pending;
		try {
			if (settlement.action === "retry") {
				await this.env.WEBHOOKS.send({ ...job, after: attempt }, { delaySeconds: settlement.delay });
			} else if (settlement.action === "dead") {
				await this.env.WEBHOOK_DEAD_LETTERS.send(job);
			}
			await this.ctx.storage.delete("pending");
			await this.ctx.storage.deleteAlarm();
		} catch (error) {
			// Left stored: the alarm tries the attempt again.
			console.error(JSON.stringify({ delivery: job.message, attempt, error: String(error) }));
			await this.ctx.storage.setAlarm(Date.now() + RETRY_SCHEDULE[0] * 1000).catch(() => undefined);
		}
	}
}
