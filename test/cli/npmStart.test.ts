/**
 * Scenario: Cairn started the way the README says, `npm start`, as a real process tree
 * (npm, then the server), stopped the way a user or a supervisor stops it: SIGTERM to
 * the process it started (npm's pid), and Ctrl-C in a terminal (SIGINT to the whole
 * process group, which npm then forwards to the server once more). Either way the
 * server stops gracefully: it prints "stopped", its lease is handed over (`cairn
 * inspect` shows no writer), npm exits 0 only after it, and no server process is left
 * running.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCairn } from "../support/runCairn.js";

const root = mkdtempSync(join(tmpdir(), "cairn-npm-start-"));
const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  rmSync(root, { recursive: true, force: true });
});

interface NpmRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
  /** The server's pid, as its startup line printed it. */
  readonly serverPid: number;
}

/** `npm start -- …` until it serves, then `stop(npmPid)`; resolves once npm exited. */
function npmStart(args: readonly string[], stop: (npmPid: number) => void): Promise<NpmRun> {
  const child = spawn("npm", ["start", "--", ...args], {
    cwd: process.cwd(),
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, as a terminal gives a command: Ctrl-C signals the group.
    detached: true,
  });
  return new Promise((resolve, reject) => {
    let output = "";
    let serverPid: number | null = null;
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const serving = /serving at http:\S+ .*pid (\d+)/.exec(output);
      if (serving === null || serverPid !== null) return;
      serverPid = Number(serving[1]);
      leftovers.push(serverPid);
      stop(child.pid!);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("error", reject);
    // On npm's exit, not when its output closes: a server npm left running would hold
    // that open. What npm's child printed before npm exited is read first (bounded).
    child.on("exit", (code, signal) => {
      const closed = new Promise((done) => child.once("close", done));
      void Promise.race([closed, new Promise((done) => setTimeout(done, 5_000))]).then(() => {
        if (serverPid === null) reject(new Error(`npm start exited (${code ?? signal}) before serving:\n${output}`));
        else resolve({ code, signal, output, serverPid });
      });
    });
  });
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("npm start", () => {
  it("stops gracefully when its process gets SIGTERM (a supervisor's stop): the lease is handed over and no server is left", { timeout: 60_000 }, async () => {
    const store = join(root, "a", "bucket");
    const run = await npmStart(["--store", store, "--local", join(root, "a", "local"), "--port", "0"], (npmPid) => process.kill(npmPid, "SIGTERM"));
    expect(run.output).toMatch(/stopping \(SIGTERM\)/);
    expect(run.output).toMatch(/shard 0: lease of epoch \d+ released/);
    expect(run.output).toMatch(/cairn: stopped/);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
    expect(isRunning(run.serverPid)).toBe(false);
    const inspect = await runCairn(["inspect", "--store", store]);
    expect(inspect.stdout).toMatch(/shard 0: epoch \d+, writer none/);
  });

  it("stops gracefully on Ctrl-C (SIGINT to the process group, forwarded once more by npm)", { timeout: 60_000 }, async () => {
    const store = join(root, "b", "bucket");
    const run = await npmStart(["--store", store, "--local", join(root, "b", "local"), "--port", "0"], (npmPid) => process.kill(-npmPid, "SIGINT"));
    expect(run.output).toMatch(/stopping \(SIGINT\)/);
    expect(run.output).toMatch(/shard 0: lease of epoch \d+ released/);
    expect(run.output).toMatch(/cairn: stopped/);
    expect(isRunning(run.serverPid)).toBe(false);
    const inspect = await runCairn(["inspect", "--store", store]);
    expect(inspect.stdout).toMatch(/shard 0: epoch \d+, writer none/);
  });
});
