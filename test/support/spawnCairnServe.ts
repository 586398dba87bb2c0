import { spawn, type ChildProcess } from "node:child_process";

export interface SpawnedServe {
  readonly child: ChildProcess;
  /** The URL `cairn serve` announced ("serving at …"). */
  readonly url: string;
  /** Everything it printed up to the announcement (stdout and stderr). */
  readonly output: string;
}

/**
 * `cairn serve` as a real child process (tsx, like `npm start`), resolved once it
 * announces its URL; rejected with its output if it exits first. Shared by the tests'
 * ServeProcess and the benchmarks' ServerChild.
 */
export function spawnCairnServe(args: readonly string[], options: { env?: Record<string, string>; nodeFlags?: readonly string[] } = {}): Promise<SpawnedServe> {
  return spawnServing(["src/cli/main.ts", "serve", ...args], options);
}

/**
 * A TypeScript entry point (run by tsx) as a child process, resolved once it prints
 * `serving at <url> ` as `cairn serve` does; rejected with its output if it exits first.
 */
export function spawnServing(scriptAndArgs: readonly string[], options: { env?: Record<string, string>; nodeFlags?: readonly string[] } = {}): Promise<SpawnedServe> {
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), "--import", "tsx", ...scriptAndArgs], {
    cwd: process.cwd(),
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
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
