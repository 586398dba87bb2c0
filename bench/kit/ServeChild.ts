import { CairnError } from "../../src/base/errors.js";
import type { WakeHintStats } from "../../src/fleet/WakeHintSender.js";
import type { NodeHealth } from "../../src/server/deploymentView.js";
import type { SyncStats } from "../../src/sync/index.js";
import type { OutputLines } from "./OutputLines.js";
import { type EndpointAddress, storeUrlAt } from "./RemoteEndpoint.js";
import { TsxChild } from "./TsxChild.js";

/** Every node a benchmark starts shares it: write forwarding and wake hints need the same key everywhere. */
export const BENCH_ADMIN_KEY = "bench-admin-key";
/** How long a stopping node may drain, release its leases and remove its watermark before it is killed. */
const STOP_WAIT_MS_DEFAULT = 20_000;
/** How long one HTTP read may take (a SIGSTOPped node must not be asked; one under load answers late). */
const HTTP_WAIT_MS_DEFAULT = 30_000;

/** What GET /api/health answers (src/server/nodeHealth.ts), as JSON. */
export type ServeHealth = NodeHealth;

/** The server process's own CPU time and memory (µs and bytes), from /api/admin/status. */
export interface ServeProcessStatus {
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
}

/** What GET /api/admin/status answers (src/server/startNode.ts), as far as benchmarks read it. */
export type ServeAdminStatus = ServeHealth & {
  readonly sync: SyncStats;
  readonly functions: { readonly conflicts: number; readonly deferrals: number };
  /** The wake hints it sent (null when it sends none). */
  readonly hints: WakeHintStats | null;
  readonly process: ServeProcessStatus;
};

export interface ServeChildOptions {
  /** How progress and errors name it ("hints writer", "fleet node a"). */
  readonly name: string;
  readonly endpoint: EndpointAddress;
  /** The deployment's key prefix in the endpoint's bucket ("sync/", "hints/"). */
  readonly prefix: string;
  readonly localDirectory: string;
  readonly appPath: string;
  /** `cairn serve` flags beyond the store, local directory, app and port (`--replica`, `--fleet --node-id a`). */
  readonly serveFlags?: readonly string[];
  /** Node's own flags (`--cpu-prof`, `--inspect=127.0.0.1:0`). */
  readonly nodeFlags?: readonly string[];
  /**
   * "source" (default): src/cli/main.ts through tsx, as `npm start` runs it; "package":
   * the built package's dist/cli/main.js, as an installed `cairn` runs (build it first).
   */
  readonly from?: "source" | "package";
  /** Output lines kept to search (0: drained unread); see TsxChild. */
  readonly outputLinesMax?: number;
  /** How long `stop` lets it drain before SIGKILL (null: as long as it takes). */
  readonly stopWaitMsMax?: number | null;
  readonly httpWaitMsMax?: number;
}

/**
 * `cairn serve` in a child process over the S3 test endpoint, as an operator runs it: an
 * `s3://` store URL, the credentials and BENCH_ADMIN_KEY in its environment, port 0. Its
 * CPU and memory are its own, not the benchmark's clients'. Each benchmark adds its role's
 * flags (a replica, a fleet node) and reads what it needs over HTTP.
 *
 * Lifecycle: TsxChild's — starting → running ⇄ paused → exited. `start` resolves once the
 * server announces its URL and rejects if it exits first; nothing may be asked of a
 * paused node (its HTTP answers would wait until it resumes).
 */
export class ServeChild {
  private constructor(
    private readonly child: TsxChild,
    readonly name: string,
    readonly url: string,
    /** The inspector's WebSocket URL when started with `--inspect`; null otherwise. */
    readonly inspectorUrl: string | null,
    private readonly stopWaitMsMax: number | null,
    private readonly httpWaitMsMax: number,
  ) {}

  static async start(options: ServeChildOptions): Promise<ServeChild> {
    const { endpoint } = options;
    const args = ["--store", storeUrlAt(endpoint, options.prefix), "--local", options.localDirectory, "--app", options.appPath, "--port", "0", ...(options.serveFlags ?? [])];
    const entry = options.from === "package" ? "dist/cli/main.js" : "src/cli/main.ts";
    const { child, url, startOutput } = await TsxChild.serving(options.name, [entry, "serve", ...args], {
      loader: options.from === "package" ? "none" : "tsx",
      env: {
        AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey,
        CAIRN_ADMIN_KEY: BENCH_ADMIN_KEY,
      },
      ...(options.nodeFlags !== undefined ? { nodeFlags: options.nodeFlags } : {}),
      ...(options.outputLinesMax !== undefined ? { outputLinesMax: options.outputLinesMax } : {}),
    });
    const inspectorUrl = /Debugger listening on (ws:\/\/\S+)/.exec(startOutput)?.[1] ?? null;
    return new ServeChild(child, options.name, url, inspectorUrl, options.stopWaitMsMax === undefined ? STOP_WAIT_MS_DEFAULT : options.stopWaitMsMax, options.httpWaitMsMax ?? HTTP_WAIT_MS_DEFAULT);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.running;
  }

  get syncUrl(): string {
    return `${this.url.replace(/^http/, "ws")}api/sync`;
  }

  /** What it printed (its start-up lines included). */
  get output(): OutputLines {
    return this.child.output;
  }

  /** GET /api/health; a "stopped" node's 503 is an answer too. */
  async health(): Promise<ServeHealth> {
    return (await this.getJson("/api/health", {}, [503])) as ServeHealth;
  }

  async adminStatus(): Promise<ServeAdminStatus> {
    return (await this.getJson("/api/admin/status", { authorization: `Admin ${BENCH_ADMIN_KEY}` })) as ServeAdminStatus;
  }

  /** Prometheus text of GET /metrics. */
  async metrics(): Promise<string> {
    return (await this.get("/metrics", {})).text();
  }

  /** SIGSTOP: the process stops where it is (its sockets stay open; the kernel queues what arrives). */
  pause(): void {
    this.child.pause();
  }

  resume(): void {
    this.child.resume();
  }

  /** SIGTERM (after SIGCONT if paused), then the exit code: 0 when it drained and stopped cleanly. */
  stop(): Promise<number | null> {
    return this.child.stop(this.stopWaitMsMax);
  }

  /** SIGKILL: no draining, no lease released; resolved once it is gone. */
  kill(): Promise<void> {
    return this.child.kill();
  }

  private async getJson(path: string, headers: Record<string, string>, alsoAnswers: readonly number[] = []): Promise<unknown> {
    return (await this.get(path, headers, alsoAnswers)).json();
  }

  private async get(path: string, headers: Record<string, string>, alsoAnswers: readonly number[] = []): Promise<Response> {
    if (this.child.isPaused) throw new CairnError("INTERNAL", `${this.name} is paused (SIGSTOP): it cannot answer`);
    const response = await fetch(new URL(path, this.url), { headers, signal: AbortSignal.timeout(this.httpWaitMsMax) });
    if (!response.ok && !alsoAnswers.includes(response.status)) {
      throw new CairnError("INTERNAL", `${this.name}: GET ${path} answered ${response.status}: ${await response.text()}`);
    }
    return response;
  }
}
