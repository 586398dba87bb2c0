import type { ChildProcess } from "node:child_process";
import { CairnError } from "../../src/base/errors.js";
import type { SyncStats } from "../../src/sync/index.js";
import { spawnCairnServe } from "../../test/support/spawnCairnServe.js";
import type { EndpointAddress } from "../commitSupport/RemoteEndpoint.js";

const ADMIN_KEY = "bench-admin-key";

export interface ServerProcessStatus {
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
}

/** The parts of /api/admin/status the benchmark reads. */
export interface ServerAdminStatus {
  readonly sync: SyncStats;
  readonly process: ServerProcessStatus;
}

export interface ServerChildOptions {
  /**
   * Node flags before the entry, e.g. `--cpu-prof --cpu-prof-dir=…` to profile the server,
   * or `--inspect=127.0.0.1:0` to reach it with an InspectorSession (`inspectorUrl`).
   */
  readonly nodeFlags?: readonly string[];
}

/**
 * `cairn serve` in a child process over the S3 test endpoint, as a user runs it: its
 * CPU and memory are its own (read from /api/admin/status), not the benchmark's clients'.
 *
 * Lifecycle: starting → serving → exited. `start` resolves once the server announces its
 * URL and rejects if it exits first; `stop` sends SIGTERM (the server drains and exits 0)
 * and resolves when the process is gone, at once if it already is.
 */
export class ServerChild {
  private readonly exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    /** The inspector's WebSocket URL when started with `--inspect`; null otherwise. */
    readonly inspectorUrl: string | null,
  ) {
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once("close", (code) => resolve(code));
    });
  }

  static async start(endpoint: EndpointAddress, prefix: string, localDirectory: string, app: string, options: ServerChildOptions = {}): Promise<ServerChild> {
    const store = `s3://${endpoint.bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
    const { child, url, output } = await spawnCairnServe(["--store", store, "--local", localDirectory, "--app", app, "--port", "0"], {
      nodeFlags: options.nodeFlags ?? [],
      env: {
        AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey,
        CAIRN_ADMIN_KEY: ADMIN_KEY,
      },
    }).catch((error: Error) => {
      throw new CairnError("INTERNAL", error.message);
    });
    // Nobody reads the server's output from here on; keep its pipes drained.
    child.stdout!.resume();
    child.stderr!.resume();
    const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(output);
    return new ServerChild(child, url, inspector?.[1] ?? null);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get syncUrl(): string {
    return `${this.url.replace(/^http/, "ws")}api/sync`;
  }

  async adminStatus(): Promise<ServerAdminStatus> {
    const response = await fetch(new URL("/api/admin/status", this.url), { headers: { authorization: `Admin ${ADMIN_KEY}` } });
    if (!response.ok) throw new CairnError("INTERNAL", `GET /api/admin/status answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as ServerAdminStatus;
  }

  async status(): Promise<ServerProcessStatus> {
    return (await this.adminStatus()).process;
  }

  /** Server CPU (user + system) in ms so far. */
  async cpuMs(): Promise<number> {
    const status = await this.status();
    return (status.cpuUserUs + status.cpuSystemUs) / 1000;
  }

  /** Prometheus text of GET /metrics. */
  async metrics(): Promise<string> {
    return (await fetch(new URL("/metrics", this.url))).text();
  }

  /** SIGTERM, then the exit code (0 when the server drained and stopped cleanly). */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}
