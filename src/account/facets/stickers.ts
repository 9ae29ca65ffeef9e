import { now } from "../../base/time";
import { database } from "../../db/client";
import type { StickerKey } from "../../db/stickers";
import { type CallerId, type Host, TIMER } from "../host";
import * as stickers from "../sticker-writes";

// The account's object's stickers (docs/stickers.md): put and removed here (a recipient of
// another account calls this object), ended by the stickers timer at their validity_ts. The
// timer is set before the put commits, so a crash right after the commit still finds it set.
export function stickerFacet(host: Host) {
	const context = (account: string): stickers.StickerContext => ({
		plain: database(host.home()),
		fanOut: Number(host.env.MAX_SUBSCRIPTIONS),
		beforeCommit: () => host.armDrain(account),
	});

	return {
		putStickers(caller: CallerId, twin: string, input: stickers.StickerInput) {
			return host.write(caller, "put_sticker", async (db, current, meter) => {
				const account = current.account;
				await host.timers.by(TIMER.stickers, account, stickers.earliestExpiry(input, now()));
				const limit = Number(host.env.MAX_STICKERS);
				const at = now();
				const put = await stickers.putStickers(db, meter, current, twin, input, limit, context(account), at);
				const { published, expired, ...value } = put;
				host.usage.add(at, current.user, { stickers_put: Object.keys(input).length });
				// Expired colors the put met count as the timer's, the account's alone.
				if (expired) host.usage.add(at, null, { stickers_expired: expired });
				if (published) await host.drain(account);
				return value;
			});
		},

		removeSticker(caller: CallerId, key: StickerKey) {
			return host.write(caller, "remove_sticker", async (db, current, meter) => {
				const at = now();
				const removed = await stickers.removeSticker(db, meter, current, key, context(key.account), at);
				const { published, ...value } = removed;
				// The sticker's account counts it; under the remover only when it is one of its users.
				host.usage.add(at, current.account === key.account ? current.user : null, { stickers_removed: 1 });
				if (published) await host.drain(key.account);
				return value;
			});
		},
	};
}
