import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, resolve } from "node:path";

/** One line of `tsc --pretty false`: `file(line,col): error TS2322: message`. */
const DIAGNOSTIC = /^(.+)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$/;
/** tsc's summary after each compilation in watch mode. */
const SUMMARY = /Found (\d+) errors?\b/;

/**
 * `cairn dev`'s type checks: the project's own TypeScript (`tsc --noEmit --watch` over
 * its tsconfig.json) in a child process, incremental across edits. Each diagnostic is
 * printed as `file:line:column: message (TScode)`, each compilation's outcome as one
 * line. Types never stop a reload: esbuild compiles what tsc complains about, and the
 * developer sees both.
 */
export class TypeChecker {
  private constructor(private readonly child: ChildProcess) {}

  /** Starts the checker, or says why there is none (no tsconfig.json, TypeScript not installed in the project) and returns null. */
  static start(projectDirectory: string, say: (line: string) => void): TypeChecker | null {
    const root = resolve(projectDirectory);
    if (!existsSync(join(root, "tsconfig.json"))) {
      say("type checks off: the project has no tsconfig.json");
      return null;
    }
    let tsc: string;
    try {
      tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
    } catch {
      say("type checks off: TypeScript is not installed in the project (npm install --save-dev typescript)");
      return null;
    }
    const child = spawn(process.execPath, [tsc, "--noEmit", "--watch", "--preserveWatchOutput", "--pretty", "false", "-p", root], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const checker = new TypeChecker(child);
    let pending = "";
    let message: string | null = null;
    const flush = () => {
      if (message !== null) say(message);
      message = null;
    };
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      const lines = pending.split(/\r?\n/);
      pending = lines.pop()!;
      for (const raw of lines) {
        const line = raw.replace(/^\S*\d{1,2}:\d{2}:\d{2}( [AP]M)? - /, "");
        const diagnostic = DIAGNOSTIC.exec(line);
        if (diagnostic !== null) {
          flush();
          const [, file, lineNumber, column, severity, code, text] = diagnostic;
          message = `type ${severity}: ${relative(root, resolve(root, file!))}:${lineNumber}:${column}: ${text} (${code})`;
        } else if (/^\s+\S/.test(line) && message !== null) {
          message += `\n  ${line.trim()}`;
        } else {
          flush();
          const summary = SUMMARY.exec(line);
          if (summary !== null) say(summary[1] === "0" ? "types: no errors" : `types: ${summary[1]} error(s)`);
        }
      }
    });
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => say(`tsc: ${chunk.trimEnd()}`));
    child.on("error", (error) => say(`type checks stopped: ${error.message}`));
    say("type checks on: tsc --watch over tsconfig.json");
    return checker;
  }

  stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((done) => {
      this.child.once("exit", () => done());
      this.child.kill("SIGTERM");
    });
  }
}
