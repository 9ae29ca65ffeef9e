// What only the webhook tests use: the test receiver's release of the requests it holds. The
// rest of the webhook helpers serve other features too, in test/support/webhooks.ts.
import { receiver } from "../support/webhooks";

// Has the receiver answer 200 to its hanging requests for `id`.
export async function release(id: string) {
	await (await fetch(`${receiver()}/release/${id}`, { method: "POST" })).text();
}
