import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Where relative entry paths ("src/cli/main.ts") resolve, and where tsx is found. */
const REPOSITORY_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface SpawnTsxOptions {
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Node's own flags, before `--import tsx` (e.g. `--cpu-prof`, `--inspect=127.0.0.1:0`). */
  readonly nodeFlags?: readonly string[];
  /** stdin, stdout, stderr; by default no stdin and both outputs piped. */
  readonly stdio?: StdioOptions;
  /** "none": the entry is JavaScript (the built package, dist/), run by node alone. Default "tsx". */
  readonly loader?: "tsx" | "none";
}

export interface SpawnedServe {
  readonly child: ChildProcess;
  /** The URL `cairn serve` announced ("serving at …"). */
  readonly url: string;
  /** Everything it printed up to the announcement (stdout and stderr). */
  readonly output: string;
}

/**
 * A TypeScript entry point as a child process, run the way `npm start` runs the CLI:
 * `node [nodeFlags] --import tsx <script> args…` from the repository root, the AWS SDK's
 * warning about Node 20 silenced. The one way the tests and the benchmarks (bench/kit's
 * TsxChild) start a child of their own.
 */
export function spawnTsx(scriptAndArgs: readonly string[], options: SpawnTsxOptions = {}): ChildProcess {
  const loader = options.loader === "none" ? [] : ["--import", "tsx"];
  return spawn(process.execPath, [...(options.nodeFlags ?? []), ...loader, ...scriptAndArgs], {
    cwd: REPOSITORY_ROOT,
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...options.env },
    stdio: options.stdio ?? ["ignore", "pipe", "pipe"],
  });
}

/**
 * `cairn serve` as a real child process (tsx, like `npm start`), resolved once it
 * announces its URL; rejected with its output if it exits first. Shared by the tests'
 * ServeProcess and the benchmarks' ServeChild.
 */
export function spawnCairnServe(args: readonly string[], options: Omit<SpawnTsxOptions, "stdio"> = {}): Promise<SpawnedServe> {
  return spawnServing(["src/cli/main.ts", "serve", ...args], options);
}

/**
 * A TypeScript entry point (run by tsx) as a child process, resolved once it prints
 * `serving at <url> ` as `cairn serve` does; rejected with its output if it exits first.
 */
export function spawnServing(scriptAndArgs: readonly string[], options: Omit<SpawnTsxOptions, "stdio"> = {}): Promise<SpawnedServe> {
  const child = spawnTsx(scriptAndArgs, options);
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /serving at (http:\/\/\S+\/) /.exec(output);
      if (match === null) return;
      child.stdout!.off("data", onData);
      child.stderr!.off("data", onData);
      child.off("close", onEarlyClose);
      resolve({ child, url: match[1]!, output });
    };
    const onEarlyClose = (code: number | null) => reject(new Error(`${scriptAndArgs[0]} exited with ${code} before serving:\n${output}`));
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("close", onEarlyClose);
  });
}
