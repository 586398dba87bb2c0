import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { spawnCairnServe } from "../support/spawnCairnServe.js";
import { freezeHoldingNoLock } from "../support/freezeHoldingNoLock.js";

/**
 * `cairn serve` as a real child process (tsx, like `npm start`), with its output kept
 * and its URL read from the line that announces it.
 */
export class ServeProcess {
  output = "";
  private exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    output: string,
  ) {
    this.output = output;
    child.stdout!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once("close", (code) => resolve(code)));
  }

  static async start(args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
    const spawned = await spawnCairnServe(args, { env });
    return new ServeProcess(spawned.child, spawned.url, spawned.output);
  }

  /** SIGKILL: no draining, no lease release, local file left as the crash leaves it. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exited;
  }

  /** SIGSTOP: the process is frozen as a long GC pause or a stalled VM freezes it. */
  pause(): void {
    this.child.kill("SIGSTOP");
  }

  /** `pause`, at a moment it holds none of the directory bucket's locks (freezeHoldingNoLock). */
  async pauseHoldingNoLock(bucketDirectory: string): Promise<void> {
    await freezeHoldingNoLock(this.child, bucketDirectory);
  }

  /** SIGCONT after `pause`. */
  resume(): void {
    this.child.kill("SIGCONT");
  }

  /** Resolves with the exit code once the process ended by itself. */
  whenExited(): Promise<number | null> {
    return this.exited;
  }

  /** SIGTERM, and the exit code. */
  async stop(): Promise<number | null> {
    this.child.kill("SIGTERM");
    return this.exited;
  }
}

/** A port free right now (bound and released), for a server that must come back on the same one. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
