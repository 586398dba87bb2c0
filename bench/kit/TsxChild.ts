import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { CairnError } from "../../src/base/errors.js";
import { spawnServing, spawnTsx } from "../../test/support/spawnCairnServe.js";
import { OutputLines } from "./OutputLines.js";

/** How a child is started, and what its stdout carries (see TsxChild). */
export interface TsxChildOptions {
  /** Node's own flags before `--import tsx` (`--cpu-prof`, `--inspect=127.0.0.1:0`). */
  readonly nodeFlags?: readonly string[];
  /** Added to the benchmark's environment (credentials, the admin key). */
  readonly env?: Readonly<Record<string, string>>;
  readonly stdout: "messages" | "output";
  /** "output": lines kept (the oldest dropped first); 0 drains the output unread. */
  readonly outputLinesMax?: number;
  /** "output": also print its stderr on the benchmark's, as it comes. */
  readonly echoStderr?: boolean;
  /** "none": a JavaScript entry (the built package) run by node alone; default tsx. */
  readonly loader?: "tsx" | "none";
}

/** A server child once it announced its URL. */
export interface ServingChild {
  readonly child: TsxChild;
  readonly url: string;
  /** What it printed up to the announcement (stdout and stderr), whatever is kept of its output. */
  readonly startOutput: string;
}

/** Lines kept when the caller does not say: enough for a failure report. */
const OUTPUT_LINES_DEFAULT = 200;

/**
 * A benchmark's child process: a TypeScript entry run by tsx (test/support's spawnTsx, as
 * `npm start` runs the CLI) — `cairn serve`, the S3 test endpoint, a load generator, a
 * bootstrap reader, `cairn reshard` — so that its CPU and memory are its own, not the
 * measuring process's. What its stdout carries is chosen at start:
 *
 * - "messages": one JSON value a line, read with `nextMessage()`; its stdin takes `send()`'s
 *   lines (each benchmark's protocol module says which); its stderr shows on the
 *   benchmark's as it happens (progress, failures).
 * - "output": stdout and stderr kept as lines (`output`) to search and to show on failure;
 *   with `echoStderr` its stderr also shows on the benchmark's.
 *
 * Lifecycle: running ⇄ paused (SIGSTOP / SIGCONT) → exited. `stop` resumes a paused
 * child, sends SIGTERM (a server drains and exits 0) and SIGKILL after `waitMsMax`, and
 * resolves with the exit code (null when a signal ended it), at once if it already exited.
 * A message asked for after the child exited, or a line that is not JSON, rejects.
 */
export class TsxChild {
  /** What it printed ("output" children; empty for "messages" children). */
  readonly output: OutputLines;
  private readonly messages: AsyncIterator<string> | null;
  private readonly exited: Promise<number | null>;
  private paused = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
    options: TsxChildOptions,
    /** What it printed before this wrapper took it over (a server's start-up lines). */
    printedBefore = "",
  ) {
    this.output = new OutputLines(options.stdout === "output" ? (options.outputLinesMax ?? OUTPUT_LINES_DEFAULT) : 0);
    this.exited = new Promise((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (code) => resolve(code));
    });
    // Observed through exitCode(), finished() or nextMessage(); an unobserved early failure must not crash the benchmark.
    this.exited.catch(() => undefined);
    if (options.stdout === "messages") {
      this.messages = createInterface({ input: child.stdout!, crlfDelay: Infinity })[Symbol.asyncIterator]();
      return;
    }
    this.messages = null;
    for (const line of printedBefore.split("\n")) this.output.add("stdout", line);
    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on("line", (line) => this.output.add("stdout", line));
    createInterface({ input: child.stderr!, crlfDelay: Infinity }).on("line", (line) => this.output.add("stderr", line));
    if (options.echoStderr === true) child.stderr!.on("data", (chunk: Buffer) => process.stderr.write(chunk));
  }

  /** Starts `scriptAndArgs` (its entry relative to the repository root). */
  static start(name: string, scriptAndArgs: readonly string[], options: TsxChildOptions): TsxChild {
    const stdio = options.stdout === "messages" ? (["pipe", "pipe", "inherit"] as const) : (["ignore", "pipe", "pipe"] as const);
    const child = spawnTsx(scriptAndArgs, { env: options.env, nodeFlags: options.nodeFlags, stdio: [...stdio] });
    return new TsxChild(child, name, options);
  }

  /**
   * Starts a server (`cairn serve`, or an entry that prints `serving at <url> ` as it does),
   * resolved once it announces its URL; rejected with its output if it exits first.
   */
  static async serving(name: string, scriptAndArgs: readonly string[], options: Omit<TsxChildOptions, "stdout">): Promise<ServingChild> {
    const { child, url, output } = await spawnServing(scriptAndArgs, { env: options.env, nodeFlags: options.nodeFlags, loader: options.loader ?? "tsx" }).catch((error: Error) => {
      throw new CairnError("INTERNAL", `${name}: ${error.message}`);
    });
    return { child: new TsxChild(child, name, { ...options, stdout: "output" }, output), url, startOutput: output };
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Its exit code once it has exited (null when a signal ended it). */
  exitCode(): Promise<number | null> {
    return this.exited;
  }

  /** The next JSON line it writes ("messages" children). */
  async nextMessage(): Promise<unknown> {
    if (this.messages === null) throw new CairnError("INTERNAL", `${this.name} was not started to send messages`);
    const line = await this.messages.next();
    if (line.done === true) {
      const code = await this.exited;
      throw new CairnError("INTERNAL", `${this.name} (pid ${this.pid}) exited with code ${code} before answering`);
    }
    try {
      return JSON.parse(line.value) as unknown;
    } catch (error) {
      throw new CairnError("INTERNAL", `${this.name} wrote a line that is not JSON: ${line.value.slice(0, 200)}`, { cause: error });
    }
  }

  /** One JSON line on its stdin ("messages" children). */
  send(message: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  /** Closes its stdin and resolves once it exited with code 0. */
  async finished(): Promise<void> {
    this.child.stdin?.end();
    const code = await this.exited;
    if (code !== 0) throw new CairnError("INTERNAL", `${this.name} (pid ${this.pid}) exited with code ${code}`);
  }

  /** SIGSTOP: the process stops where it is (its sockets stay open; the kernel queues what arrives). */
  pause(): void {
    if (!this.running) throw new CairnError("INTERNAL", `${this.name} has exited: it cannot be paused`);
    this.child.kill("SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.child.kill("SIGCONT");
    this.paused = false;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** SIGTERM (after SIGCONT if paused), SIGKILL after `waitMsMax` (null: never), then the exit code. */
  async stop(waitMsMax: number | null): Promise<number | null> {
    if (!this.running) return this.exited;
    this.resume();
    this.child.kill("SIGTERM");
    const killer = waitMsMax === null ? null : setTimeout(() => this.child.kill("SIGKILL"), waitMsMax);
    try {
      return await this.exited;
    } finally {
      if (killer !== null) clearTimeout(killer);
    }
  }

  /** SIGKILL (no draining), resolved once it is gone; at once if it already is. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill("SIGKILL");
    await this.exited.catch(() => undefined);
  }
}
