import { spawn, type ChildProcess } from "node:child_process";
import { CairnError } from "../../src/base/errors.js";
import type { EndpointAddress } from "../commitSupport/RemoteEndpoint.js";

const ADMIN_KEY = "bench-admin-key";

export interface ServerProcessStatus {
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
}

/**
 * `cairn serve` in a child process over the S3 test endpoint, as a user runs it: its
 * CPU and memory are its own (read from /api/admin/status), not the benchmark's clients'.
 */
export class ServerChild {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static start(endpoint: EndpointAddress, prefix: string, localDirectory: string, app: string): Promise<ServerChild> {
    const store = `s3://${endpoint.bucket}/${prefix}?endpoint=${encodeURIComponent(endpoint.url)}&region=${endpoint.region}&forcePathStyle=true`;
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "serve", "--store", store, "--local", localDirectory, "--app", app, "--port", "0"], {
      cwd: process.cwd(),
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: endpoint.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: endpoint.credentials.secretAccessKey,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        CAIRN_ADMIN_KEY: ADMIN_KEY,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new Promise((resolve, reject) => {
      let output = "";
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /serving at (http:\/\/\S+\/) /.exec(output);
        if (match === null) return;
        child.stdout!.off("data", onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve(new ServerChild(child, match[1]!));
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.once("close", (code) => reject(new CairnError("INTERNAL", `cairn serve exited with ${code}:\n${output}`)));
    });
  }

  get syncUrl(): string {
    return `${this.url.replace(/^http/, "ws")}api/sync`;
  }

  async status(): Promise<ServerProcessStatus> {
    const response = await fetch(new URL("/api/admin/status", this.url), { headers: { authorization: `Admin ${ADMIN_KEY}` } });
    return ((await response.json()) as { process: ServerProcessStatus }).process;
  }

  /** Server CPU (user + system) in ms so far. */
  async cpuMs(): Promise<number> {
    const status = await this.status();
    return (status.cpuUserUs + status.cpuSystemUs) / 1000;
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once("close", resolve));
    this.child.kill("SIGTERM");
    await exited;
  }
}
