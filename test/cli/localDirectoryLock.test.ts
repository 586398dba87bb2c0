/**
 * Scenario: a user starts `cairn serve` twice on the same --local directory (two
 * terminals, a supervisor that restarts too early). The second start, and `cairn gc` on
 * that directory, are refused with LOCAL_DIRECTORY_LOCKED naming the pid of the process
 * that has it, and change nothing (the first keeps its lease). A server that was
 * SIGKILLed leaves its lock file behind; the next start takes it over, and a graceful
 * stop removes it.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { runCairn } from "../support/runCairn.js";
import { ServeProcess } from "../server/serveProcess.js";

const root = mkdtempSync(join(tmpdir(), "cairn-local-lock-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const servers: ServeProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.kill();
});

const store = join(root, "bucket");
const local = join(root, "local");

async function serve(): Promise<ServeProcess> {
  const server = await ServeProcess.start(["--store", store, "--local", local, "--port", "0", "--app", "test/sync/syncApp.ts"]);
  servers.push(server);
  return server;
}

function pidOf(server: ServeProcess): number {
  return Number(/pid (\d+)/.exec(server.output)![1]);
}

describe("one process per local directory", () => {
  it("refuses a second serve and a gc on a directory in use, naming the holder's pid; a dead holder's lock is taken over", { timeout: 90_000 }, async () => {
    const first = await serve();
    const holder = pidOf(first);

    // A second serve on it: refused before it touches the bucket (stopped at once if it serves instead).
    const second = await runCairn(["serve", "--store", store, "--local", local, "--port", "0", "--app", "test/sync/syncApp.ts"], {
      stream: "stdout",
      pattern: /serving at/,
      signal: "SIGTERM",
    });
    expect(second.stdout).not.toMatch(/serving at/);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`\\[LOCAL_DIRECTORY_LOCKED\\] the local directory .* is in use by process ${holder} `));

    const gc = await runCairn(["gc", "--store", store, "--local", local]);
    expect(gc.code).toBe(1);
    expect(gc.stderr).toMatch(new RegExp(`\\[LOCAL_DIRECTORY_LOCKED\\].* process ${holder} `));

    // The first server still writes.
    const health = (await (await fetch(`${first.url}api/health`)).json()) as { role: string };
    expect(health.role).toBe("writer");

    // SIGKILLed, it leaves its lock behind; the next start takes it over.
    await first.kill();
    expect(existsSync(join(local, "cairn.lock"))).toBe(true);
    const third = await serve();
    expect(pidOf(third)).not.toBe(holder);
    expect(await third.stop()).toBe(0);
    expect(existsSync(join(local, "cairn.lock"))).toBe(false);
  });
});
