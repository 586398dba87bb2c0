#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_LOCAL_DIRECTORY, DEFAULT_STORE_URL } from "../base/index.js";
import type { ServeOptions } from "./serveCommand.js";
import { SERVE_HEAP_MIB_DEFAULT, SERVE_HEAP_MIB_MIN, serveInWorker } from "./serveInWorker.js";
import { LOG_FORMATS } from "./logFormat.js";
import { durationMs, momentTs, positiveDurationMs } from "./pointInTime.js";

/**
 * A command's module, loaded when the command runs: `cairn serve`'s thread then holds the
 * argument parser and the worker's launcher, not a second copy of the whole node (its
 * worker thread loads that), and every command starts without loading the others.
 */
function lazily<Args extends unknown[]>(load: () => Promise<(...args: Args) => unknown>): (...args: Args) => Promise<void> {
  return async (...args) => {
    await (await load())(...args);
  };
}

/**
 * `cairn` — the command-line entry. `npm start` runs `cairn serve` on the embedded
 * default: a directory in ./.cairn as the bucket, one shard.
 */
export const DEFAULT_PORT = 3210;

function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65_535) throw new InvalidArgumentError("expected a port number (0–65535)");
  return parsed;
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError("expected a positive integer");
  return parsed;
}

/** A node's heap limit: 0 (none of its own), or enough to start a node at all. */
function heapLimitMib(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || (parsed !== 0 && parsed < SERVE_HEAP_MIB_MIN) || parsed > 1_048_576) {
    throw new InvalidArgumentError(`expected 0 or a whole number of MiB from ${SERVE_HEAP_MIB_MIN}`);
  }
  return parsed;
}

function shardNumber(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed)) throw new InvalidArgumentError("expected a shard number (0, 1, …)");
  return parsed;
}

/** The options every command that opens the bucket shares. */
function storeCommand(name: string, description: string, options: { isDefault?: boolean } = {}): Command {
  return program
    .command(name, options)
    .description(description)
    .option("--store <url>", "bucket: file:///abs/dir, a path, s3://bucket/prefix?endpoint=…, mem://name", DEFAULT_STORE_URL);
}

/** How client tokens are verified (docs/auth.md): one of a secret, a key set file or a key set URL. */
function withAuth(command: Command): Command {
  return command
    .option("--jwt-secret <secret>", "verify client tokens as HS256 JWTs with this secret (or set CAIRN_JWT_SECRET)")
    .option("--jwks <file>", "verify client tokens as RS256/ES256 JWTs against this JSON Web Key Set file")
    .option("--jwks-url <url>", "verify client tokens as RS256/ES256 JWTs against the key set at this https URL (cached; re-fetched for an unknown key id)")
    .option("--jwt-issuer <iss>", "require this `iss` in client tokens")
    .option("--jwt-audience <aud>", "require this `aud` in client tokens");
}

/** --log-format: text for people, JSON lines (node lines and each function call with what it printed) for log shippers. */
function withLogFormat(command: Command): Command {
  return command.addOption(
    new Option("--log-format <format>", "text, or json: one JSON object per line on stdout (node lines; each function call with its console lines, outcome and duration)")
      .choices(LOG_FORMATS)
      .default("text"),
  );
}

function withLocal(command: Command): Command {
  return command.option("--local <dir>", "directory for the local SQLite materialization", DEFAULT_LOCAL_DIRECTORY);
}

// Apps are bundled with inline source maps (loadApp): their stack traces then name their own files and lines.
process.setSourceMapsEnabled(true);

const program = new Command()
  .name("cairn")
  .description("A reactive document database whose only durable home is an object-store bucket");

function milliseconds(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed)) throw new InvalidArgumentError("expected a whole number of milliseconds");
  return parsed;
}

withLogFormat(withAuth(withLocal(storeCommand("serve", "open (or create) the deployment and become the writer of its shards (or, with --replica/--standby, follow it)", { isDefault: true }))))
  .option("--shards <n>", "shard count of a new deployment (an existing one must match)", positiveInteger)
  .option("--node-id <id>", "this node's id in the manifests (default: a random id kept in the local directory)")
  .option("--app <file>", "the app module (schema and functions) to serve, a .ts or .js file (default: cairn/app.ts if there is one here, as `cairn init` makes it; else the demo app)")
  .option("--static <dir>", "serve your web app's built files from this directory (with its index.html at / and for the app's routes) instead of the status page")
  .option("--cors-origin <origin...>", "let pages of this origin (https://app.example.com; repeatable or a comma list; * for any) call the API and open the sync socket (default: same-origin only)")
  .option("--http-path <path>", "where the app's HTTP actions (its `http` router) are served", "/http")
  .option("--file-max-mib <n>", "the largest file an upload or an action may store, in MiB (default 1024)", positiveInteger)
  .option("--port <n>", "HTTP and WebSocket port (0: any free port)", port, DEFAULT_PORT)
  .option("--host <address>", "address to listen on (0.0.0.0 for every interface)", "127.0.0.1")
  .option("--replica", "tail the bucket and serve reads and live queries; forward writes to the shard's writer (needs CAIRN_ADMIN_KEY)")
  .option("--standby", "a replica that takes over a shard once its writer's lease lapses (same as --replica --takeover)")
  .option("--takeover", "with --replica: take over like a standby")
  .option("--fleet", "join the deployment's fleet: write the shards rendezvous hashing gives this node among the live nodes, follow the rest, forward writes to their owners (needs CAIRN_ADMIN_KEY)")
  .option("--beat-ms <ms>", "fleet: how often presence is renewed and the live set read (default 2000)", milliseconds)
  .option("--presence-ttl-ms <ms>", "fleet: how long a node counts as live after its last beat (default 6000; at least 2 beats, at most the lease TTL)", milliseconds)
  .option("--advertise-url <url>", "the URL other nodes reach this one at (default: the URL it listens on)")
  .option("--max-clock-skew-ms <ms>", "clock difference between nodes that takeovers tolerate: a lease counts as lapsed this long after it expired", milliseconds, 1000)
  .option("--poll-interval-ms <ms>", "replica: longest wait between polls of a quiet log", positiveInteger, 1000)
  .option("--no-wake-hints", "neither send nor take wake hints (replicas then rely on polling alone)")
  .option("--engine-tuning <json>", "advanced: shard engine tuning as JSON, e.g. '{\"leaseTtlMs\":5000,\"heartbeatIntervalMs\":1500}' (see src/shard/engineOptions.ts)")
  .option(
    "--heap-mib <n>",
    `the node's JavaScript heap limit in MiB: bounds its memory (V8 collects sooner near it); 0: none of its own, Node's default`,
    heapLimitMib,
    SERVE_HEAP_MIB_DEFAULT,
  )
  .addHelpText(
    "after",
    "\nEnvironment: CAIRN_ADMIN_KEY enables the admin API (/api/admin/*, internal functions) and the dashboard (/_dashboard) for that key;" +
      "\nevery node of a deployment needs the same key for write forwarding and wake hints.",
  )
  .action(async ({ heapMib, ...options }: ServeOptions & { readonly heapMib: number }) =>
    heapMib === 0 ? (await import("./serveCommand.js")).serveCommand(options) : serveInWorker(options, heapMib),
  );

program
  .command("init")
  .argument("[dir]", "the project folder (default: this one)")
  .description("scaffold an app: schema and functions in cairn/, a page in web/, tsconfig.json and package.json scripts (dev, build, start)")
  .option("--force", "add the app to a folder that already has files (never overwriting one)")
  .option("--react", "make the page a React app (cairn/react; adds react and react-dom to package.json)")
  .action(lazily(async () => (await import("./initCommand.js")).initCommand));

withLogFormat(withAuth(withLocal(storeCommand("dev", "serve the project's app and page on the embedded store, reload them on every change, type-check beside it"))))
  .option("--app <file>", "the app module", "cairn/app.ts")
  .option("--web <dir>", "the page's folder (index.html and the scripts it loads), built and served at /", "web")
  .option("--port <n>", "HTTP and WebSocket port (0: any free port)", port, DEFAULT_PORT)
  .option("--host <address>", "address to listen on", "127.0.0.1")
  .option("--cors-origin <origin...>", "origins whose pages may call the API (default: any localhost page)")
  .option("--http-path <path>", "where the app's HTTP actions (its `http` router) are served", "/http")
  .option("--file-max-mib <n>", "the largest file an upload or an action may store, in MiB (default 1024)", positiveInteger)
  .option("--no-typecheck", "do not run tsc --watch beside the server")
  .option("--open", "open the dashboard (logged in) in the desktop's browser")
  .action(lazily(async () => (await import("./devCommand.js")).devCommand));

program
  .command("build")
  .description("build the page in web/ for production into dist/ (hashed, minified scripts), for `cairn serve --static dist`")
  .option("--web <dir>", "the page's folder", "web")
  .option("--out <dir>", "the output folder (replaced as a whole)", "dist")
  .action(lazily(async () => (await import("./buildCommand.js")).buildCommand));

storeCommand("inspect", "print the deployment's globals, each shard's manifest and log extent").action(lazily(async () => (await import("./inspectCommand.js")).inspectCommand));

storeCommand("verify", "check every shard's manifest, log and snapshot (checksums, chain, epochs, contiguity); exit 1 on a problem")
  .option("--shard <n>", "verify only this shard", shardNumber)
  .action(lazily(async () => (await import("./verifyCommand.js")).verifyCommand));

withLocal(storeCommand("gc", "run one garbage-collection pass on every shard (takes and returns each shard's lease)"))
  .option("--dry-run", "only print what a pass would delete now; takes no lease, writes nothing")
  .action(lazily(async () => (await import("./gcCommand.js")).gcCommand));

storeCommand("reshard", "move a stopped deployment to another shard count (every node must be stopped; safe to re-run)")
  .requiredOption("--to <n>", "the new shard count", positiveInteger)
  .option("--work-dir <dir>", "directory for the temporary SQLite copies of the old shards (default: a fresh one under the OS temp directory)")
  .option("--lock-ttl-ms <ms>", "how long the reshard lock (and the old shards' leases) outlive a reshard that stopped renewing them", milliseconds, 30_000)
  .option("--heap-mib <n>", "the reshard's JavaScript heap limit in MiB (bounds its memory; default 192)", positiveInteger)
  .option("--allow-live-followers", "reshard although replicas or standbys are registered live (they re-open on the new layout by themselves)")
  .action(lazily(async () => (await import("./reshardCommand.js")).reshardCommand));

storeCommand("restore", "bring back the deployment's state at a past moment (within its retention): as a new deployment at --to, or --in-place")
  .requiredOption("--at <time>", "the moment: an ISO 8601 date-time with a time zone (2026-12-06T18:00:00Z) or a ts in µs", (value: string) => momentTs(value))
  .option("--to <url>", "an empty bucket or prefix for a new deployment holding that state (this one is only read)")
  .option("--in-place", "make that state this deployment's current one (every node stopped; the replaced state is kept for the retention window, so a later restore undoes it)")
  .option("--work-dir <dir>", "directory for the temporary SQLite file of the log one shard replays (default: a fresh one under the OS temp directory)")
  .option("--heap-mib <n>", "the restore's JavaScript heap limit in MiB (bounds its memory; default 192)", positiveInteger)
  .action(lazily(async () => (await import("./restoreCommand.js")).restoreCommand));

storeCommand("export", "write the deployment's documents at one moment into a new folder: one documents.jsonl per table (Convex's layout) and cairn-export.json")
  .option("--at <time>", "the moment: an ISO 8601 date-time with a time zone or a ts in µs (default: the newest moment every shard's log has closed)", (value: string) => momentTs(value))
  .requiredOption("--to <dir | file.zip>", "the folder to create, or a new .zip file")
  .option("--work-dir <dir>", "directory for the temporary SQLite file of the log one shard replays (default: a fresh one under the OS temp directory)")
  .option("--heap-mib <n>", "the export's JavaScript heap limit in MiB (bounds its memory; default 192)", positiveInteger)
  .action(lazily(async () => (await import("./exportCommand.js")).exportCommand));

withLocal(storeCommand("import", "load a `cairn export` folder (or a Convex export's) into the deployment, checked against the app's schema first; safe to re-run"))
  .requiredOption("--from <dir | file.zip>", "the export: a `cairn export` (with cairn-export.json) or a Convex snapshot export (npx convex export --path …), as a folder or a .zip")
  .option("--shards <n>", "shards of a new deployment made from a Convex export (default 1; a Cairn export brings its own count)", positiveInteger)
  .option("--heap-mib <n>", "the import's JavaScript heap limit in MiB (bounds its memory; default 256)", positiveInteger)
  .option("--app <file>", "the app module whose schema the documents are checked against (default: cairn/app.ts if there is one here, else the demo app)")
  .action(lazily(async () => (await import("./importCommand.js")).importCommand));

const branch = program
  .command("branch")
  .description("a new deployment that starts as this one's state at a moment and shares its objects below it (nothing copied): create (default), list, renew, delete");
branch
  .command("create", { isDefault: true })
  .description("branch the deployment at --store into an empty --to")
  .option("--store <url>", "the parent deployment: file:///abs/dir, a path, s3://bucket/prefix?endpoint=…", DEFAULT_STORE_URL)
  .requiredOption("--to <url>", "an empty bucket or prefix for the branch (give a prefix of the same bucket to share it)")
  .option("--at <time>", "the moment: an ISO 8601 date-time with a time zone or a ts in µs (default: the newest moment every shard's log has closed)", (value: string) => momentTs(value))
  .option("--ttl <duration>", "how long the parent keeps what the branch reads, renewed by `cairn branch renew` (default 7d)", (value: string) => positiveDurationMs(value))
  .option("--name <id>", "the branch's name in the parent's registry (a-z, 0-9, _ and -; default: random)")
  .action(lazily(async () => (await import("./branchCommand.js")).branchCreateCommand));
branch
  .command("list")
  .description("the branches registered in the deployment at --store, and how long each is held")
  .option("--store <url>", "the parent deployment", DEFAULT_STORE_URL)
  .action(lazily(async () => (await import("./branchCommand.js")).branchListCommand));
branch
  .command("renew")
  .description("extend how long the parent keeps what the branch at --store reads (refused once it expired)")
  .requiredOption("--store <url>", "the branch")
  .option("--ttl <duration>", "the new ttl from now (default: the branch's own)", (value: string) => positiveDurationMs(value))
  .action(lazily(async () => (await import("./branchCommand.js")).branchRenewCommand));
branch
  .command("delete")
  .description("delete the branch at --store (every node of it stopped): its own objects and its registration; nothing of the parent")
  .requiredOption("--store <url>", "the branch")
  .action(lazily(async () => (await import("./branchCommand.js")).branchDeleteCommand));

storeCommand("retention", "print how far back every past state of the deployment stays restorable, or change it with --set")
  .option("--set <duration>", "the new window: 0 (keep only the current state) or 30m, 36h, 7d, …", (value: string) => durationMs(value))
  .action(lazily(async () => (await import("./retentionCommand.js")).retentionCommand));

program.parseAsync().catch((error: unknown) => {
  const code = (error as { code?: string }).code;
  process.stderr.write(`cairn: ${code ? `[${code}] ` : ""}${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
