import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { CairnError } from "../../src/base/errors.js";

/**
 * A child Node process running a TypeScript entry through tsx (`node --import tsx entry
 * args…`, from the repository root so that `tsx` resolves) that speaks JSON lines: every
 * line it writes on stdout is one JSON value, and the parent may send it JSON lines on
 * stdin. Its stderr is the parent's, so its progress and failures show as they happen.
 *
 * Lifecycle: running → exited. A message asked for after the child exited, or a line that
 * is not JSON, rejects; an exit with a non-zero code rejects `finished()`.
 */
const REPOSITORY_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export class TsxChild {
  private readonly lines: AsyncIterator<string>;
  private readonly exitCode: Promise<number>;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
  ) {
    const stdout = child.stdout;
    if (stdout === null) throw new CairnError("INTERNAL", `${name}: the child has no stdout pipe`);
    this.lines = createInterface({ input: stdout, crlfDelay: Infinity })[Symbol.asyncIterator]();
    this.exitCode = new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
    });
    // Observed through finished() or nextMessage(); an unobserved early failure must not crash the parent.
    this.exitCode.catch(() => undefined);
  }

  /** Starts `entry` (a path relative to this folder) with `args`, after Node's own `nodeFlags`. */
  static start(name: string, entry: string, args: readonly string[], nodeFlags: readonly string[] = []): TsxChild {
    const entryPath = fileURLToPath(new URL(entry, import.meta.url));
    const child = spawn(process.execPath, [...nodeFlags, "--import", "tsx", entryPath, ...args], {
      cwd: REPOSITORY_ROOT,
      stdio: ["pipe", "pipe", "inherit"],
    });
    return new TsxChild(child, name);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The next JSON line the child writes. */
  async nextMessage(): Promise<unknown> {
    const line = await this.lines.next();
    if (line.done === true) {
      const code = await this.exitCode;
      throw new CairnError("INTERNAL", `${this.name} (pid ${this.pid}) exited with code ${code} before answering`);
    }
    try {
      return JSON.parse(line.value) as unknown;
    } catch (error) {
      throw new CairnError("INTERNAL", `${this.name} wrote a line that is not JSON: ${line.value.slice(0, 200)}`, { cause: error });
    }
  }

  send(message: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  /** Closes the child's stdin and resolves once it exited with code 0. */
  async finished(): Promise<void> {
    this.child.stdin?.end();
    const code = await this.exitCode;
    if (code !== 0) throw new CairnError("INTERNAL", `${this.name} (pid ${this.pid}) exited with code ${code}`);
  }

  /** Ends this child (and only it) if it is still running. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
  }
}
