/**
 * Scenario: `cairn serve` runs its node in a worker thread with a capped JavaScript heap
 * (--heap-mib, default SERVE_HEAP_MIB_DEFAULT), so that its memory is bounded with Node's
 * default flags: the cap is the node's (its metrics report it), the process keeps one pid
 * that SIGTERM stops gracefully (a repeated SIGTERM does not cut the stop short), and
 * a hostile function that exhausts the heap ends the process with a clear error naming
 * --heap-mib instead of hanging it. `--heap-mib 0` runs the node on the main thread.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SERVE_HEAP_MIB_DEFAULT } from "../../src/cli/serveInWorker.js";
import { ServeProcess } from "../server/serveProcess.js";

const MIB = 1024 * 1024;
const directories: string[] = [];
const processes: ServeProcess[] = [];
afterEach(async () => {
  for (const process of processes.splice(0)) await process.kill();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function directory(): string {
  const made = mkdtempSync(join(tmpdir(), "cairn-serve-heap-"));
  directories.push(made);
  return made;
}

async function serve(extra: string[], base = directory()): Promise<ServeProcess> {
  const node = await ServeProcess.start(["--store", `file://${join(base, "bucket")}`, "--local", join(base, "local"), "--port", "0", ...extra]);
  processes.push(node);
  return node;
}

async function heapLimitBytes(url: string): Promise<number> {
  const text = await (await fetch(new URL("metrics", url))).text();
  const match = /^cairn_heap_limit_bytes (\d+)$/m.exec(text);
  if (match === null) throw new Error(`no cairn_heap_limit_bytes in the metrics:\n${text.slice(0, 2000)}`);
  return Number(match[1]);
}

describe("cairn serve's heap", () => {
  it("caps the node's heap by default and at --heap-mib, and stops gracefully on SIGTERM, repeated or not", async () => {
    const byDefault = await serve([]);
    const defaultLimit = await heapLimitBytes(byDefault.url);
    // The old generation's cap plus V8's young generation (tens of MiB).
    expect(defaultLimit).toBeGreaterThanOrEqual(SERVE_HEAP_MIB_DEFAULT * MIB);
    expect(defaultLimit).toBeLessThan((SERVE_HEAP_MIB_DEFAULT + 128) * MIB);
    expect(await byDefault.stop()).toBe(0);

    const capped = await serve(["--heap-mib", "160"]);
    const limit = await heapLimitBytes(capped.url);
    expect(limit).toBeGreaterThanOrEqual(160 * MIB);
    expect(limit).toBeLessThan(288 * MIB);
    // Two SIGTERMs back to back, as a supervisor that repeats itself sends them: the stop is not cut short.
    void capped.stop();
    expect(await capped.stop()).toBe(0);
    expect(capped.output).toContain("stopping (SIGTERM)");
    expect(capped.output).toMatch(/lease of epoch \d+ released/);
    expect(capped.output).toContain("stopped");
  });

  it("runs the node on the main thread with --heap-mib 0, under Node's own limit", async () => {
    const unbounded = await serve(["--heap-mib", "0"]);
    expect(await heapLimitBytes(unbounded.url)).not.toBe(await heapLimitBytes((await serve(["--heap-mib", "96"])).url));
    expect(await unbounded.stop()).toBe(0);
  });

  it("ends the process with a clear error when a function exhausts the heap, instead of hanging", async () => {
    const base = directory();
    const app = join(base, "greedy.ts");
    writeFileSync(
      app,
      `import { defineSchema, defineTable, functionsFor, v } from "${join(process.cwd(), "src/package/index.ts")}";
export const schema = defineSchema({ notes: defineTable({ body: v.string() }) });
const { query } = functionsFor(schema);
export const functions = {
  greedy: {
    hoard: query({
      handler: async () => {
        const hoard: string[] = [];
        for (let n = 0; ; n++) hoard.push(String(n).repeat(1_000));
      },
    }),
  },
};
`,
    );
    const node = await serve(["--app", app, "--heap-mib", "96"], base);
    const answer = fetch(new URL("api/query", node.url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "greedy:hoard", args: {} }) }).catch(
      (error: unknown) => error,
    );
    expect(await node.whenExited()).toBe(1);
    expect(node.output).toContain("[INTERNAL] the node ran out of its 96 MiB JavaScript heap; restart it with a larger --heap-mib");
    expect(await answer).toBeInstanceOf(Error);
  });

  it("refuses a heap limit too small to start a node, before touching the bucket", async () => {
    const base = directory();
    await expect(serve(["--heap-mib", "16"], base)).rejects.toThrow(/--heap-mib.*expected 0 or a whole number of MiB from 64/s);
  });
});
