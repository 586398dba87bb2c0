import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const TSX_LOADER = pathToFileURL(`${REPO}node_modules/tsx/dist/loader.mjs`).href;
const CLI_MAIN = `${REPO}src/cli/main.ts`;

/** What a `cairn` child process printed, and how it ended. */
export interface CairnRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CairnSignalRule {
  /** Which output to watch. */
  readonly stream: "stdout" | "stderr";
  /** Sent once, as soon as everything printed on `stream` so far matches. */
  readonly pattern: RegExp;
  readonly signal: NodeJS.Signals;
}

/**
 * `cairn …` as a real child process (tsx, like `npm start`), resolved when it exits;
 * with `signalWhen`, signalled once its output matches (SIGINT to stop a server, SIGKILL
 * to kill a command midway).
 */
export function runCairn(args: readonly string[], signalWhen?: CairnSignalRule, options: { readonly cwd?: string } = {}): Promise<CairnRun> {
  return new Promise((resolve, reject) => {
    // Absolute paths: a run in another folder (a project's) finds tsx and the CLI all the same.
    const child = spawn(process.execPath, ["--import", TSX_LOADER, CLI_MAIN, ...args], {
      cwd: options.cwd ?? process.cwd(),
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    });
    const output = { stdout: "", stderr: "" };
    let signalled = false;
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream].on("data", (chunk: Buffer) => {
        output[stream] += chunk.toString();
        if (signalWhen?.stream === stream && !signalled && signalWhen.pattern.test(output[stream])) {
          signalled = true;
          child.kill(signalWhen.signal);
        }
      });
    }
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, ...output }));
  });
}
