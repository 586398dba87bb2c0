import type { ChildProcess } from "node:child_process";
import { CairnError } from "../../src/base/errors.js";
import { spawnCairnServe } from "../../test/support/spawnCairnServe.js";
import { type EndpointAddress, exitOf, forEachLine, storeUrlAt } from "../commitSupport/RemoteEndpoint.js";
import type { ServerAdminStatus } from "../syncSupport/ServerChild.js";

/** Every node of a benchmark deployment shares it: write forwarding and wake hints need the same key everywhere. */
export const BENCH_ADMIN_KEY = "bench-admin-key";
/** Output lines a node keeps for the benchmark to search (replay progress prints at most twice a second). */
const OUTPUT_LINES_MAX = 20_000;
/** How long a stopping node may drain before it is killed. */
const STOP_WAIT_MS_MAX = 20_000;
/** How long one HTTP read of a node may take (a node SIGSTOPped must not be asked). */
const HTTP_WAIT_MS_MAX = 30_000;

export interface NodeChildOptions {
  readonly name: string;
  readonly role: "writer" | "replica";
  readonly endpoint: EndpointAddress;
  /** The deployment's key prefix in the endpoint's bucket ("pair-a/"). */
  readonly prefix: string;
  readonly localDirectory: string;
  readonly appPath: string;
  readonly wakeHints: boolean;
  /** Replica: its idle poll (`--poll-interval-ms`). */
  readonly pollIntervalMs?: number;
}

/** One shard's line of GET /api/health. */
export interface ShardHealth {
  readonly shard: number;
  readonly state: string;
  readonly appliedSeqno: number;
  readonly frontierTs: number;
  readonly stalenessMs: number | null;
  readonly lastError: { readonly code: string; readonly message: string } | null;
  readonly writer: string | null;
  readonly epoch: number;
}

export interface NodeHealth {
  readonly status: "ok" | "degraded";
  readonly role: string;
  readonly nodeId: string;
  readonly deploymentId: string;
  readonly shards: readonly ShardHealth[];
  readonly frontierTs: number;
  readonly stalenessMs: number | null;
}

/** The writer's wake-hint counters in /api/admin/status (null when it sends none). */
export interface HintStats {
  readonly sent: number;
  readonly failed: number;
  readonly dropped: number;
}

export interface NodeAdminStatus extends ServerAdminStatus {
  readonly hints: HintStats | null;
}

/** A line the node printed, and when it arrived (Date.now()). */
export interface OutputLine {
  readonly atMs: number;
  readonly text: string;
}

/**
 * `cairn serve` (a writer) or `cairn serve --replica` in a child process over the S3 test
 * endpoint, as an operator runs it. It keeps what it prints so that a benchmark can look
 * for engine events (snapshots, GC, restores) it has no API for.
 *
 * Lifecycle: starting → running ⇄ paused (SIGSTOP / SIGCONT) → exited. `start` resolves
 * once the node announces its URL and rejects if it exits first; `stop` resumes a paused
 * node, sends SIGTERM (it drains, releases its lease or removes its watermark, exits 0),
 * kills it after STOP_WAIT_MS_MAX, and resolves when it is gone, at once if it already is.
 * Nothing may be asked of a paused node: its HTTP answers wait until it resumes.
 */
export class NodeChild {
  private readonly exited: Promise<number | null>;
  private readonly lines: OutputLine[] = [];
  private linesDropped = 0;
  private paused = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
    readonly url: string,
    output: string,
  ) {
    this.exited = exitOf(child);
    forEachLine(child, output, (line) => this.keep(line));
  }

  static async start(options: NodeChildOptions): Promise<NodeChild> {
    const { endpoint } = options;
    const store = storeUrlAt(endpoint, options.prefix);
    const args = ["--store", store, "--local", options.localDirectory, "--app", options.appPath, "--port", "0"];
    if (options.role === "replica") args.push("--replica");
    if (!options.wakeHints) args.push("--no-wake-hints");
    if (options.pollIntervalMs !== undefined) args.push("--poll-interval-ms", String(options.pollIntervalMs));
    const { child, url, output } = await spawnCairnServe(args, {
      env: {
        AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey,
        CAIRN_ADMIN_KEY: BENCH_ADMIN_KEY,
      },
    }).catch((error: Error) => {
      throw new CairnError("INTERNAL", `${options.name}: ${error.message}`);
    });
    return new NodeChild(child, options.name, url, output);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get syncUrl(): string {
    return `${this.url.replace(/^http/, "ws")}api/sync`;
  }

  async health(): Promise<NodeHealth> {
    return (await this.getJson("/api/health", {})) as NodeHealth;
  }

  /** Shard 0's line of the health report (the benchmark's deployments have one shard). */
  async shardHealth(): Promise<ShardHealth> {
    const shard = (await this.health()).shards[0];
    if (shard === undefined) throw new CairnError("INTERNAL", `${this.name} reports no shard`);
    return shard;
  }

  async adminStatus(): Promise<NodeAdminStatus> {
    return (await this.getJson("/api/admin/status", { authorization: `Admin ${BENCH_ADMIN_KEY}` })) as NodeAdminStatus;
  }

  /** Prometheus text of GET /metrics. */
  async metrics(): Promise<string> {
    this.assertRunning();
    const response = await fetch(new URL("/metrics", this.url), { signal: AbortSignal.timeout(HTTP_WAIT_MS_MAX) });
    if (!response.ok) throw new CairnError("INTERNAL", `${this.name}: GET /metrics answered ${response.status}`);
    return response.text();
  }

  /** A position in the output: `linesSince(mark)` returns what was printed after it. */
  mark(): number {
    return this.linesDropped + this.lines.length;
  }

  linesSince(mark: number): readonly OutputLine[] {
    return this.lines.slice(Math.max(0, mark - this.linesDropped));
  }

  /** SIGSTOP: the process stops where it is (its sockets stay open; the kernel queues what arrives). */
  pause(): void {
    this.assertRunning();
    this.child.kill("SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.child.kill("SIGCONT");
    this.paused = false;
  }

  /** SIGTERM (after SIGCONT if paused), then the exit code: 0 when the node drained and stopped cleanly. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.resume();
    this.child.kill("SIGTERM");
    const killer = setTimeout(() => this.child.kill("SIGKILL"), STOP_WAIT_MS_MAX);
    try {
      return await this.exited;
    } finally {
      clearTimeout(killer);
    }
  }

  private async getJson(path: string, headers: Record<string, string>): Promise<unknown> {
    this.assertRunning();
    const response = await fetch(new URL(path, this.url), { headers, signal: AbortSignal.timeout(HTTP_WAIT_MS_MAX) });
    if (!response.ok) throw new CairnError("INTERNAL", `${this.name}: GET ${path} answered ${response.status}: ${await response.text()}`);
    return response.json();
  }

  private assertRunning(): void {
    if (this.paused) throw new CairnError("INTERNAL", `${this.name} is paused (SIGSTOP): it cannot answer`);
  }

  private keep(text: string): void {
    if (text.length === 0) return;
    this.lines.push({ atMs: Date.now(), text });
    if (this.lines.length > OUTPUT_LINES_MAX) {
      this.lines.shift();
      this.linesDropped++;
    }
  }
}
