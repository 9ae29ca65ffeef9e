import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import { checkedShards, declaredShards } from "../db/shards";
import { findMoves, validBucket } from "../db/moves";
import type { MoveView } from "../shards/move-object";
import { type Context, defineOperation } from "./operation";

// Moving a bucket of accounts between D1 databases (docs/scaling.md, "Moving a bucket"), driven
// by `npm run shards:move` with the administrator's token, as create_account is.

const moveOut = z.object({
	bucket: z.number(),
	source: z.string(),
	target: z.string(),
	state: z.enum(["grace", "copying", "copied", "finishing", "aborting", "done", "aborted"]),
	started_ts: z.number(),
	copied_rows: z.number(),
	deleted_rows: z.number(),
});

const bucketParams = z.strictObject({ bucket: z.string().check(z.regex(/^\d{1,3}$/, "Must be a bucket, 0-255")) });

const mover = (ctx: Context, bucket: number) => ctx.env.MOVES.getByName(`bucket-${bucket}`);

function bucketOf(text: string): number {
	const bucket = Number(text);
	if (!validBucket(bucket)) throw new ApiError("not_found", { description: "No such bucket (0-255)" });
	return bucket;
}

const noMove = () => new ApiError("not_found", { description: "The bucket has no move" });

export const getShards = defineOperation({
	name: "get_shards",
	summary: "The bucket map this version of the Worker serves",
	description:
		"The SHARDS map the serving Worker reads (buckets to D1 bindings) and the D1 bindings it declares: a move waits for it to show the new map before writes resume.",
	refuses: [],
	auth: "admin",
	response: z.object({ shards: z.string(), bindings: z.array(z.string()).check(z.maxLength(256)) }),
	async run(_input, ctx) {
		checkedShards(ctx.env);
		return { shards: ctx.env.SHARDS, bindings: declaredShards(ctx.env) };
	},
});

export const createShardMove = defineOperation({
	name: "create_shard_move",
	summary: "Begin moving a bucket of accounts to another D1 database",
	description:
		"Begins moving bucket `bucket` to the binding `to`: from now its accounts' writes answer 503241 until the move finishes or is aborted. One move at a time.",
	refuses: ["validation", "conflict"],
	example: { bucket: 7, to: "DB_1" },
	auth: "admin",
	status: 201,
	response: moveOut,
	body: z.strictObject({
		bucket: z.number().check(z.int(), z.gte(0), z.lte(255)),
		to: z.string().check(z.regex(/^DB_\d{1,3}$/, "Must be a D1 binding DB_k")),
	}),
	async run({ body }, ctx) {
		const map = checkedShards(ctx.env);
		if (!declaredShards(ctx.env).includes(body.to)) {
			const message = `${body.to} is not a declared D1 binding`;
			throw new ApiError("validation", { description: message, details: [{ path: "to", message }] });
		}
		const source = map[body.bucket]!;
		if (source === body.to)
			throw new ApiError("conflict", { description: `Bucket ${body.bucket} is on ${body.to} already` });
		const { results } = await findMoves(ctx.shards.of("DB_0"));
		const running = results.find((move) => move.bucket !== body.bucket);
		if (running)
			throw new ApiError("conflict", { description: `Bucket ${running.bucket} is moving; one move at a time` });
		const started = await mover(ctx, body.bucket).start(body.bucket, source, body.to);
		if (!started.ok)
			throw new ApiError("conflict", { description: `Bucket ${body.bucket} is moving (${started.running.state})` });
		return started.move;
	},
});

export const getShardMove = defineOperation({
	name: "get_shard_move",
	summary: "A bucket's move as it stands (and its end, once the Worker serves the new map)",
	description:
		"The bucket's move: its state and the rows copied and deleted. Asked of a Worker whose SHARDS maps the bucket to the move's target once the copy is done, it lets writes resume there and deletes the source's rows.",
	refuses: ["not_found"],
	auth: "admin",
	response: moveOut,
	params: bucketParams,
	async run({ params }, ctx) {
		const bucket = bucketOf(params.bucket);
		const move: MoveView | undefined = await mover(ctx, bucket).status(checkedShards(ctx.env)[bucket]!);
		if (!move) throw noMove();
		return move;
	},
});

export const deleteShardMove = defineOperation({
	name: "delete_shard_move",
	summary: "Abort a bucket's move not yet flipped: the copy goes, writes resume on the source",
	description:
		"Aborts the bucket's move: the copy on the target is deleted, then writes resume on the source. A move the serving Worker's SHARDS already flipped can only finish (409).",
	refuses: ["not_found", "conflict"],
	auth: "admin",
	response: moveOut,
	params: bucketParams,
	async run({ params }, ctx) {
		const bucket = bucketOf(params.bucket);
		const aborted = await mover(ctx, bucket).abort(checkedShards(ctx.env)[bucket]!);
		if (aborted.ok) return aborted.move;
		if (!aborted.move) throw noMove();
		throw new ApiError("conflict", { description: "The move is flipped already: it can only finish" });
	},
});
