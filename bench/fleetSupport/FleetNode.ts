import type { ChildProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { spawnCairnServe } from "../../test/support/spawnCairnServe.js";
import { type EndpointAddress, exitOf, forEachLine, storeUrlAt } from "../commitSupport/RemoteEndpoint.js";
import { BENCH_ADMIN_KEY } from "../replicaSupport/NodeChild.js";
import { processCpuMs } from "./procCpu.js";

/** Output lines kept for a failure report (the rest is dropped as it comes). */
const OUTPUT_LINES_KEPT = 200;
/** How long a stopping node may drain and hand its leases over before it is killed. */
const STOP_WAIT_MS_MAX = 30_000;
/** How long one health or status read may take (a node under load may answer late; its lateness is measured). */
const HTTP_WAIT_MS_MAX = 60_000;

export interface FleetNodeOptions {
  readonly nodeId: string;
  readonly endpoint: EndpointAddress;
  /** The deployment's key prefix in the endpoint's bucket. */
  readonly prefix: string;
  readonly localDirectory: string;
  readonly appPath: string;
  readonly numShards: number;
  /** Node's own flags (e.g. --cpu-prof). */
  readonly nodeFlags?: readonly string[];
}

/** One shard's line of a fleet node's GET /api/health. */
export interface FleetShardHealth {
  readonly shard: number;
  readonly state: string;
  readonly role: string;
  readonly writer: string | null;
  readonly target?: string | null;
  readonly epoch: number;
  readonly appliedSeqno: number;
  /** As the node last read the manifest (ISO), null without a writer. */
  readonly leaseExpiresAt: string | null;
}

export interface FleetHealth {
  readonly status: string;
  readonly nodeId: string;
  readonly shards: readonly FleetShardHealth[];
  readonly fleet?: { readonly liveNodes: readonly string[]; readonly beats: number };
}

/**
 * `cairn serve --fleet` in a child process over the S3 test endpoint (an s3:// store URL,
 * credentials in the environment, CAIRN_ADMIN_KEY set), as an operator runs it. Its CPU
 * is read from /proc. `stop` sends SIGTERM (it drains and hands its leases over) and
 * resolves with its exit code; `kill` sends SIGKILL and resolves once it is gone.
 */
export class FleetNode {
  private readonly exited: Promise<number | null>;
  /** Lines it printed, each with its arrival time (wall clock, ms). */
  private readonly output: { readonly atWallMs: number; readonly text: string }[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly nodeId: string,
    readonly url: string,
    output: string,
  ) {
    this.exited = exitOf(child);
    forEachLine(child, output, (line) => this.keep(line));
  }

  static async start(options: FleetNodeOptions): Promise<FleetNode> {
    const { endpoint } = options;
    const store = storeUrlAt(endpoint, options.prefix);
    const args = ["--fleet", "--store", store, "--local", options.localDirectory, "--app", options.appPath, "--port", "0", "--node-id", options.nodeId, "--shards", String(options.numShards)];
    const { child, url, output } = await spawnCairnServe(args, {
      env: { AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey, CAIRN_ADMIN_KEY: BENCH_ADMIN_KEY },
      ...(options.nodeFlags !== undefined ? { nodeFlags: options.nodeFlags } : {}),
    }).catch((error: Error) => {
      throw new CairnError("INTERNAL", `fleet node ${options.nodeId}: ${error.message}`);
    });
    return new FleetNode(child, options.nodeId, url, output);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** utime + stime so far, every thread, in ms (null once it exited). */
  cpuMs(): number | null {
    return processCpuMs(this.pid);
  }

  async health(): Promise<FleetHealth> {
    const response = await fetch(new URL("/api/health", this.url), { signal: AbortSignal.timeout(HTTP_WAIT_MS_MAX) });
    return (await response.json()) as FleetHealth;
  }

  /** GET /api/admin/status (with the bench's admin key): the wake hints it sent, among the rest. */
  async adminStatus(): Promise<{ readonly hints: { readonly sent: number; readonly failed: number; readonly dropped: number } | null }> {
    const response = await fetch(new URL("/api/admin/status", this.url), { headers: { authorization: `Admin ${BENCH_ADMIN_KEY}` }, signal: AbortSignal.timeout(HTTP_WAIT_MS_MAX) });
    return (await response.json()) as { hints: { sent: number; failed: number; dropped: number } | null };
  }

  /** The last lines it printed. */
  lastOutput(lines = 40): string {
    return this.output.slice(-lines).map((line) => line.text).join("\n");
  }

  /** When it first printed a line matching `pattern` at or after `sinceWallMs` (wall clock, ms), or null. */
  printedAt(pattern: RegExp, sinceWallMs: number): number | null {
    return this.output.find((line) => line.atWallMs >= sinceWallMs && pattern.test(line.text))?.atWallMs ?? null;
  }

  async kill(): Promise<void> {
    if (this.running) this.child.kill("SIGKILL");
    await this.exited;
  }

  async stop(): Promise<number | null> {
    if (!this.running) return this.exited;
    this.child.kill("SIGTERM");
    const killer = setTimeout(() => this.child.kill("SIGKILL"), STOP_WAIT_MS_MAX);
    try {
      return await this.exited;
    } finally {
      clearTimeout(killer);
    }
  }

  private keep(line: string): void {
    if (line.length === 0) return;
    this.output.push({ atWallMs: performance.timeOrigin + performance.now(), text: line });
    if (this.output.length > OUTPUT_LINES_KEPT) this.output.shift();
  }
}
