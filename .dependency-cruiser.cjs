// The house's layers, from the ground up. A folder may import its own files and the layers
// below it, never one above: `npm run lint` (and CI) fails on an arrow that runs back up.
//
//   routes.ts, index.ts,  the route table, the Durable Object classes the Worker exports and
//   objects.ts            the Worker's entry: may import everything
//   jobs/                 batches and exports (docs/batches.md): the job's object (BatchDO),
//                         which runs a batch's lines as its creator's calls of the operations,
//                         and writes export files
//   http/                 the request pipeline, router, auth, API document
//   operations/           one file per resource: defineOperation handlers
//   shards/               moving a bucket of accounts between D1 databases: its object
//   account/              the account's object (AccountDO): its serialized writes, the guards
//                         around them, scan pages and cursors, and the typed client to call it
//   timeseries/           Timeseries tables: the chunk object (TimeseriesDO) that stores a
//                         chunk's points and rollups, and the shapes its callers share
//   notifications/        everything that delivers a message to a receiver: the outbox drain,
//                         the queue consumer, the delivery object, messages, signing, retries,
//                         the callback URL policy; streams/: the live streams' object and frames
//   storage/              the bytes of docs in R2: streamed in while hashed, read by range,
//                         deleted; signed download links
//   db/                   every D1 statement (drizzle schema and queries)
//   policy/               pure permission logic: statements, grants, manageability
//   rules/                the rule language: parse, evaluate, compile to SQL
//   base/                 errors, the caller, time, crypto and sealing, JSON: imports nothing of src/
//
// SQL lives in db/, except the Durable Object's own SQLite storage (scan cursors, the write
// journal): that is the object's private storage, not D1, so account/ keeps it; likewise the
// chunk object's points and rollups stay in timeseries/.

const layer = (name, below) => ({
	name: `${name}-imports-only-below`,
	comment: `${name}/ may import only ${below.length ? below.join(", ") : "nothing of src/ but itself"}`,
	severity: "error",
	from: { path: `^src/${name}/` },
	to: { path: "^src/", pathNot: [`^src/${name}/`, ...below.map((b) => `^src/${b}/`)] },
});

module.exports = {
	forbidden: [
		// The ground: everything may import it, it imports nothing of the service.
		layer("base", []),
		// The rule language needs only the caller and JSON of the base.
		layer("rules", ["base"]),
		// Policy decides over rules (grants compare rule trees) and nothing else: no I/O.
		layer("policy", ["base", "rules"]),
		// D1 statements take compiled SQL as text, so db/ needs no rules of its own.
		layer("db", ["base"]),
		// R2 objects and the links to them: bytes, never rows.
		layer("storage", ["base"]),
		// Notifications read subscriptions and the outbox and build messages from stored rows, and
		// filter them with the rule language for readers whose role confines them.
		layer("notifications", ["base", "db", "rules"]),
		// Chunk objects store points with their own SQLite; the table's counts are D1 rows.
		layer("timeseries", ["base", "rules", "db"]),
		// The account's object runs the serialized writes and scans with rules, policy and db,
		// deletes the R2 objects its writes let go of, and hands the messages a write committed to the notification outbox drain.
		layer("account", ["base", "rules", "policy", "db", "storage", "notifications", "timeseries"]),
		// A bucket's move reads and writes rows of every table, as rows, on every shard.
		layer("shards", ["base", "db"]),
		// Handlers reach the objects, the database and the pure layers; never http/.
		layer("operations", [
			"base",
			"rules",
			"policy",
			"db",
			"storage",
			"notifications",
			"account",
			"shards",
			"timeseries",
		]),
		// The HTTP layer serves operations; it never reaches past them into the object.
		layer("http", ["base", "rules", "policy", "db", "operations"]),
		// A job's object calls operations as a request would: through http/'s validation, error
		// envelope and request log, without a Request.
		layer("jobs", [
			"base",
			"rules",
			"policy",
			"db",
			"storage",
			"notifications",
			"account",
			"shards",
			"timeseries",
			"operations",
			"http",
		]),
		{
			name: "nothing-imports-the-top",
			comment: "routes.ts, objects.ts and index.ts are the top: only index.ts may import routes.ts and objects.ts",
			severity: "error",
			from: { path: "^src/", pathNot: "^src/index\\.ts$" },
			to: { path: "^src/(index|routes|objects)\\.ts$" },
		},
		{
			name: "no-document-in-the-worker",
			comment:
				"the API document is built at build time (scripts/build/openapi.mjs); the Worker must not bundle its generator",
			severity: "error",
			from: { path: "^src/" },
			to: { path: "^src/http/openapi\\.ts$" },
		},
		{
			name: "no-circular",
			comment: "files that import each other in a loop cannot be layered",
			severity: "error",
			from: { path: "^src/" },
			to: { circular: true },
		},
		{
			name: "no-test-code-in-src",
			comment: "the Worker must not bundle tests, test helpers or test-only packages",
			severity: "error",
			from: { path: "^src/" },
			to: {
				path: [
					"^test/",
					"^node_modules/(vitest|@vitest|@cloudflare/vitest-plugin|fast-check|playwright-core)/",
					"^cloudflare:test$",
				],
			},
		},
		{
			name: "no-node-builtins-in-src",
			comment: "the Worker runs on workerd without nodejs_compat: no Node built-ins",
			severity: "error",
			from: { path: "^src/" },
			to: { dependencyTypes: ["core"] },
		},
		{
			name: "no-unresolvable",
			comment: "an import that does not resolve is a typo or a missing dependency",
			severity: "error",
			from: { path: "^src/" },
			to: { couldNotResolve: true, pathNot: "^cloudflare:" },
		},
	],
	options: {
		doNotFollow: { path: "node_modules" },
		tsPreCompilationDeps: true,
		tsConfig: { fileName: "tsconfig.json" },
		enhancedResolveOptions: {
			exportsFields: ["exports"],
			conditionNames: ["import", "require", "node", "default", "types"],
			mainFields: ["module", "main", "types", "typings"],
		},
	},
};
