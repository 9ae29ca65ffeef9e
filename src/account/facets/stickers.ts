import { now } from "../../base/time";
import { homeOf } from "../../db/shards";
import type { LineMark } from "../../db/jobs";
import type { StickerKey } from "../../db/stickers";
import { type CallerId, type Host, TIMER } from "../host";
import * as stickers from "../sticker-writes";

// The account's object's stickers (docs/stickers.md): put and removed here (a recipient of
// another account calls this object), ended by the stickers timer at their validity_ts. The
// timer is set before the put commits, so a crash right after the commit still finds it set.
// Copies for recipients in other databases are written and ended right after the commit, in the
// same step; the copies' timer, set before the commit, retries what that could not do. `mark`:
// the call is a batch line (sticker-writes.ts says where its mark commits).
export function stickerFacet(host: Host) {
	return {
		putStickers(caller: CallerId, twin: string, input: stickers.StickerInput, mark?: LineMark) {
			return host.write(caller, "put_sticker", async (db, current, meter) => {
				const account = current.account;
				await host.timers.by(TIMER.stickers, account, stickers.earliestExpiry(input, now()));
				const limit = Number(host.env.MAX_STICKERS);
				const at = now();
				const c = stickers.stickerContext(host, account);
				const put = await stickers.putStickers(db, meter, current, twin, input, limit, c, at, mark);
				const { published, expired, copied, ...value } = put;
				host.usage.add(at, current.user, { stickers_put: Object.keys(input).length });
				// Expired colors the put met count as the timer's, the account's alone.
				if (expired) host.usage.add(at, null, { stickers_expired: expired });
				if (copied) await stickers.drainCopies(host.env, account);
				if (published) await host.drain(account);
				return value;
			});
		},

		removeSticker(caller: CallerId, key: StickerKey, mark?: LineMark) {
			return host.write(caller, "remove_sticker", async (db, current, meter) => {
				const at = now();
				const c = stickers.stickerContext(host, key.account);
				const removed = await stickers.removeSticker(db, meter, current, key, c, at, mark);
				const { published, copied, ...value } = removed;
				// The sticker's account counts it; under the remover only when it is one of its users.
				host.usage.add(at, current.account === key.account ? current.user : null, { stickers_removed: 1 });
				const left = copied && (await stickers.drainCopies(host.env, key.account));
				if (published) await host.drain(key.account);
				// A remover in another database answers once its own copy is gone: it is a recipient, so
				// the sticker had a copy there, which a drain that failed may have left.
				if (left && homeOf(host.env, current.account) !== homeOf(host.env, key.account))
					throw new Error("The sticker is removed, but the remover's copy of it is not yet deleted");
				return value;
			});
		},
	};
}
