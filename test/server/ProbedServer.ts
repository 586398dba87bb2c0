import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServing } from "../support/spawnCairnServe.js";

/** Output kept from the child: its last lines (a fuzz run makes it log a lot). */
const OUTPUT_CHARS_KEPT = 64 * 1024;

/**
 * test/support/probedNode.ts as a child process started with --expose-gc: a real server
 * whose death a test can see, and whose heap it can read after a full collection.
 */
export class ProbedServer {
  private output = "";
  private exitCode: number | null | undefined = undefined;
  private readonly exited: Promise<void>;
  private heapWaiters: ((bytes: number) => void)[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly directory: string,
  ) {
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        this.exitCode = code ?? (signal !== null ? -1 : null);
        resolve();
      }),
    );
    let partial = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      this.keep(chunk);
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        const heap = /^heap (\d+)$/.exec(line);
        if (heap !== null) this.heapWaiters.shift()?.(Number(heap[1]));
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => this.keep(chunk));
  }

  private keep(chunk: Buffer): void {
    this.output = (this.output + chunk.toString()).slice(-OUTPUT_CHARS_KEPT);
  }

  static async start(): Promise<ProbedServer> {
    const directory = mkdtempSync(join(tmpdir(), "cairn-probed-"));
    const { child, url } = await spawnServing(["test/support/probedNode.ts", directory], { nodeFlags: ["--expose-gc"] });
    return new ProbedServer(child, url, directory);
  }

  /** Whether the process is still running. */
  get alive(): boolean {
    return this.exitCode === undefined;
  }

  /** What it printed last (for a failing test's message). */
  get log(): string {
    return this.output;
  }

  /** Sockets the process has open (Linux: its file descriptors that are sockets). */
  openSockets(): number {
    const fds = `/proc/${this.child.pid}/fd`;
    return readdirSync(fds).filter((fd) => {
      try {
        return readlinkSync(`${fds}/${fd}`).startsWith("socket:");
      } catch {
        return false; // closed while we looked
      }
    }).length;
  }

  /** heapUsed after a full collection, in bytes. */
  heapUsed(): Promise<number> {
    const answer = new Promise<number>((resolve) => this.heapWaiters.push(resolve));
    this.child.kill("SIGUSR2");
    return answer;
  }

  async stop(): Promise<void> {
    if (this.alive) {
      this.child.kill("SIGTERM");
      await this.exited;
    }
    rmSync(this.directory, { recursive: true, force: true });
  }
}
