import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { CairnError } from "../../src/base/errors.js";
import type { Cleanup } from "../kit/Cleanup.js";
import type { BenchLatencyModel } from "../kit/latencyModels.js";
import type { OutputLines } from "../kit/OutputLines.js";
import { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { BENCH_ADMIN_KEY, ServeChild } from "../kit/ServeChild.js";
import { TsxChild } from "../kit/TsxChild.js";

/** Output lines of the node kept, to show when it fails. */
const OUTPUT_LINES_MAX = 2_000;
/** How long a stopping node may drain before it is killed. */
const STOP_WAIT_MS = 20_000;
/** How long one HTTP call may take. */
const CALL_WAIT_MS = 60_000;

/** Where the node's bucket lives: a directory (the default) or the S3 test endpoint with a latency model. */
export type StoreKind = "directory" | "s3";

/** What every phase needs of the node, whichever its bucket. */
export interface PlatformNode {
  readonly url: string;
  readonly syncUrl: string;
  readonly pid: number;
  readonly output: OutputLines;
  /** One line for the table: where the bucket is, and its latency. */
  readonly storeDescription: string;
  /** The bucket's objects and bytes now. */
  bucketSize(): Promise<{ readonly objects: number; readonly bytes: number }>;
  /** The endpoint's latency off (a bulk load) or the model's on; nothing for a directory. */
  latency(on: boolean): Promise<void>;
  /** POST /api/query or /api/mutation; the function's value. */
  call(kind: "query" | "mutation", path: string, args: Record<string, unknown>): Promise<unknown>;
}

/**
 * `cairn serve` in a child process, as `npm start` runs it, serving the bench app:
 * - "directory" (default): `--store <a temp dir>` — the kit's ServeChild only speaks S3, so
 *   the child is started with the kit's TsxChild.serving as ServeChild starts its own;
 * - "s3": the kit's RemoteEndpoint (S3 test endpoint in its own child) and ServeChild.
 * Everything started is stopped by `cleanup`.
 */
export async function startPlatformNode(options: {
  readonly store: StoreKind;
  readonly latencyModel: BenchLatencyModel;
  readonly directory: string;
  readonly appPath: string;
  /** Where the node writes a V8 CPU profile when it stops (it then runs on its main thread, which the profiler sees); null: none. */
  readonly cpuProfileDirectory: string | null;
  readonly cleanup: Cleanup;
  readonly progress: (message: string) => void;
}): Promise<PlatformNode> {
  const { cleanup, progress } = options;
  const localDirectory = join(options.directory, "local");
  const profiled = options.cpuProfileDirectory !== null;
  const nodeFlags = profiled ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDirectory}`] : [];
  const serveFlags = profiled ? ["--heap-mib", "0"] : [];
  if (options.store === "s3") {
    progress("starting the S3 test endpoint in a child process…");
    const endpoint = await RemoteEndpoint.start(options.latencyModel);
    cleanup.add("closing the endpoint", () => endpoint.close());
    progress("starting cairn serve in a child process (S3 test endpoint)…");
    const server = await ServeChild.start({
      name: "cairn serve",
      endpoint: endpoint.address,
      prefix: "platform/",
      localDirectory,
      appPath: options.appPath,
      nodeFlags,
      serveFlags,
      outputLinesMax: OUTPUT_LINES_MAX,
      stopWaitMsMax: STOP_WAIT_MS,
    });
    cleanup.add("stopping the server", () => stopped(server.stop(), progress));
    const store = endpoint.store("platform/");
    cleanup.add("closing the bucket client", () => store.close());
    return {
      url: server.url,
      syncUrl: server.syncUrl,
      pid: server.pid,
      output: server.output,
      storeDescription: `S3 test endpoint (child process), ${options.latencyModel.description}`,
      bucketSize: async () => {
        let objects = 0;
        let bytes = 0;
        for await (const entry of store.list("")) {
          objects++;
          bytes += entry.size;
        }
        return { objects, bytes };
      },
      latency: (on) => (on ? endpoint.latencyOn() : endpoint.latencyOff()),
      call: (kind, path, args) => callFunction(server.url, kind, path, args),
    };
  }
  const bucket = join(options.directory, "bucket");
  progress("starting cairn serve in a child process (directory bucket)…");
  const { child, url } = await TsxChild.serving(
    "cairn serve",
    ["src/cli/main.ts", "serve", "--store", bucket, "--local", localDirectory, "--app", options.appPath, "--port", "0", ...serveFlags],
    { env: { CAIRN_ADMIN_KEY: BENCH_ADMIN_KEY }, nodeFlags, outputLinesMax: OUTPUT_LINES_MAX },
  );
  cleanup.add("stopping the server", () => stopped(child.stop(STOP_WAIT_MS), progress));
  return {
    url,
    syncUrl: `${url.replace(/^http/, "ws")}api/sync`,
    pid: child.pid!,
    output: child.output,
    storeDescription: `directory bucket on local disk (${bucket})`,
    bucketSize: () => directorySize(bucket),
    latency: async () => undefined,
    call: (kind, path, args) => callFunction(url, kind, path, args),
  };
}

async function stopped(exit: Promise<number | null>, progress: (message: string) => void): Promise<void> {
  const code = await exit;
  if (code !== 0) progress(`cairn serve exited with ${code}`);
}

/** A public function over HTTP (POST /api/<kind>), as any client calls it; its value, or the node's error. */
export async function callFunction(url: string, kind: "query" | "mutation", path: string, args: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(`${url}api/${kind}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ path, args }),
    signal: AbortSignal.timeout(CALL_WAIT_MS),
  });
  const text = await response.text();
  if (response.status !== 200) throw new CairnError("INTERNAL", `${kind} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  return (JSON.parse(text) as { value: unknown }).value;
}

/** Files and bytes under `root` (the directory bucket). */
async function directorySize(root: string): Promise<{ objects: number; bytes: number }> {
  let objects = 0;
  let bytes = 0;
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    // A lock file may be gone between the listing and its stat.
    const size = await stat(join(entry.parentPath, entry.name)).then((stats) => stats.size, () => null);
    if (size === null) continue;
    objects++;
    bytes += size;
  }
  return { objects, bytes };
}
