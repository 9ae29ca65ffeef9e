import { env } from "cloudflare:workers";
import { bindingOfBucket, homeDatabase, homeOf } from "../../src/db/shards";
import { bucketOfIdentity, sibling } from "../../src/base/shards";

// The D1 database holding the rows of the account `id` belongs to (an account uuid, or the id
// of any row it made): tests that read or write D1 past the API find it as the Worker does.
export const dbOf = (id: string): D1Database => homeDatabase(env, id);

// Every shard the tests' configuration declares.
export const allShards = (): D1Database[] => [env.DB_0, env.DB_1];

// A new id of the account `of`, as the account's writes make them (the same bucket).
export const idOf = (of: string) => sibling(of);

// The binding of that database (DB_0, DB_1).
export const bindingOf = (id: string): string => homeOf(env, id);

// The change to an environment (`call`'s `env` option, an object's env) that puts `db` in place
// of the database holding the rows of the account `id` belongs to.
export const onShardOf = (id: string, db: D1Database | undefined): Partial<Record<keyof Env, unknown>> => ({
	[bindingOf(id)]: db,
});

// The binding whose directory holds an identity's entries (resolve with context=system asks it).
export const directoryOf = async (identity: string): Promise<string> =>
	bindingOfBucket(env, await bucketOfIdentity(identity));

// A name nobody attached, as long as `identity`, whose directory is in the same database: the
// absence an answer about `identity` is compared with. `stem` and a digit, the first that fits.
export async function absentIdentityLike(identity: string, stem: string): Promise<string> {
	const home = await directoryOf(identity);
	for (let digit = 0; digit < 10; digit++) {
		const name = `${stem}${digit}`;
		if ((await directoryOf(name)) === home) return name;
	}
	throw new Error(`no ${stem}<digit> has its directory where ${identity} has`);
}
