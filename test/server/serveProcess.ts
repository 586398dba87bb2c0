import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

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

  static start(args: string[], env: Record<string, string> = {}): Promise<ServeProcess> {
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", "serve", ...args], {
      cwd: process.cwd(),
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env },
    });
    return new Promise((resolve, reject) => {
      let output = "";
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /serving at (http:\/\/\S+\/) /.exec(output);
        if (match === null) return;
        child.stdout.off("data", onData);
        child.stderr.off("data", onData);
        child.off("close", onClose);
        resolve(new ServeProcess(child, match[1]!, output));
      };
      const onClose = (code: number | null) => reject(new Error(`cairn serve exited with ${code} before serving:\n${output}`));
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.once("close", onClose);
    });
  }

  /** SIGKILL: no draining, no lease release, local file left as the crash leaves it. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exited;
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
