/**
 * Scenario: the `cairn` command as a user runs it, in real child processes: `serve`
 * creates a deployment in a directory store, becomes the writer and, on SIGINT,
 * releases its lease and exits 0; `inspect` then shows the log and no writer; a store URL
 * it cannot use is refused with a clear message and exit code 1.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCairn, type CairnRun } from "../support/runCairn.js";

const root = mkdtempSync(join(tmpdir(), "cairn-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** `cairn …` in a child; with `untilOutput`, sent SIGINT once its stdout matches. */
function cairn(args: string[], untilOutput?: RegExp): Promise<CairnRun> {
  return runCairn(args, untilOutput === undefined ? undefined : { stream: "stdout", pattern: untilOutput, signal: "SIGINT" });
}

describe("cairn command", () => {
  const store = join(root, "bucket");
  const local = join(root, "local");

  it("serves a new deployment and releases its lease on SIGINT", async () => {
    const run = await cairn(["serve", "--port", "0", "--store", store, "--local", local], /is the writer/);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/conditional writes verified/);
    expect(run.stdout).toMatch(/shard 0: writer at epoch 1 \(fence at seqno 0\)/);
    expect(run.stdout).toMatch(/lease of epoch 1 released/);
    expect(run.stdout).toMatch(/stopped/);
  });

  it("takes over again at once on the next start, and inspect shows the log", async () => {
    const run = await cairn(["serve", "--port", "0", "--store", store, "--local", local], /is the writer/);
    expect(run.stdout).toMatch(/writer at epoch 2 \(fence at seqno 1\)/);
    const inspect = await cairn(["inspect", "--store", store]);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toMatch(/1 shard\(s\)/);
    expect(inspect.stdout).toMatch(/shard 0: epoch 2, writer none, logStart 0, segments 0\.\.1 \(2\)/);
  });

  it("verify finds the log sound, gc runs (and dry-runs), and verify exits 1 on a corrupted segment", async () => {
    const sound = await cairn(["verify", "--store", store]);
    expect(sound.code).toBe(0);
    expect(sound.stdout).toMatch(/shard 0: epoch 2, logStart 0, segments 0\.\.1 checked \(2\)/);
    expect(sound.stdout).toMatch(/verify: no problems found/);
    const dryRun = await cairn(["gc", "--store", store, "--local", local, "--dry-run"]);
    expect(dryRun.code).toBe(0);
    expect(dryRun.stdout).toMatch(/shard 0: logStart stays 0, would delete 0 segment\(s\)/);
    const gc = await cairn(["gc", "--store", store, "--local", local]);
    expect(gc.code).toBe(0);
    expect(gc.stdout).toMatch(/shard 0: logStart 0 → 0, deleted 0 segment\(s\)/);
    // Flip one byte of segment 1 in the directory store (its file sits after a header line).
    const segmentFile = join(store, "s0", "log", `${"0".repeat(19)}1@`);
    const bytes = readFileSync(segmentFile);
    bytes[bytes.length - 40]! ^= 0x01;
    writeFileSync(segmentFile, bytes);
    const broken = await cairn(["verify", "--store", store, "--shard", "0"]);
    expect(broken.code).toBe(1);
    // The directory store itself refuses a file that does not match its etag header.
    expect(broken.stdout).toMatch(/shard 0: PROBLEM: object file of s0\/log\/0{19}1 does not match its etag/);
  });

  it("refuses a store URL it cannot use, and a deployment that does not exist", async () => {
    const bad = await cairn(["serve", "--port", "0", "--store", "ftp://example.com/bucket", "--local", local]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/STORE_URL_INVALID/);
    const missing = await cairn(["inspect", "--store", join(root, "empty")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no Cairn deployment/);
  });
});

describe("cairn serve --app", () => {
  const functions = join(process.cwd(), "src", "functions", "index.js");
  const store = join(root, "app-bucket");
  const local = join(root, "app-local");

  function appFile(name: string, source: string): string {
    const file = join(root, name);
    writeFileSync(file, source.replaceAll("FUNCTIONS", JSON.stringify(functions)));
    return file;
  }

  const goodApp = `
    import { defineSchema, defineTable, query, v } from FUNCTIONS;
    export const schema = defineSchema({ notes: defineTable({ text: v.string() }), tags: defineTable({ name: v.string() }) });
    export const functions = { notes: { count: query({ handler: async (ctx) => (await ctx.db.query("notes").collect()).length }) } };
  `;

  it("serves the demo app by default and a given app file, numbering its tables", async () => {
    const demo = await cairn(["serve", "--port", "0", "--store", join(root, "demo-bucket"), "--local", join(root, "demo-local")], /is the writer/);
    expect(demo.code).toBe(0);
    expect(demo.stdout).toMatch(/demo\/app\.ts: 5 function\(s\): counters:get, counters:increment, messages:list, messages:page, messages:send/);
    const run = await cairn(["serve", "--port", "0", "--store", store, "--local", local, "--app", appFile("good.ts", goodApp)], /is the writer/);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/good\.ts: 1 function\(s\): notes:count/);
    expect(run.stdout).toMatch(/tables: notes \(#1\), tags \(#2\)/);
  });

  it("stops startup with a clear error naming the file: missing, broken, inconsistent, or a refused schema change", async () => {
    const cases: [string, RegExp][] = [
      [join(root, "nowhere.ts"), /\[APP_LOAD_FAILED\] app .*nowhere\.ts: no such file/],
      [appFile("syntax.ts", "export const schema = {;"), /\[APP_LOAD_FAILED\] app .*syntax\.ts failed to compile:\n  .*syntax\.ts:1:\d+: /],
      [appFile("throws.ts", `import { defineSchema, defineTable, v } from FUNCTIONS;
        export const schema = defineSchema({ t: defineTable({ x: v.string() }).index("by_y", ["y"]) });
        export const functions = {};`), /\[APP_LOAD_FAILED\] app .*throws\.ts failed to load: invalid schema: table t: index by_y is on "y"/],
      [appFile("noschema.ts", "export const functions = {};"), /\[SCHEMA_INVALID\] app .*noschema\.ts: it must export `schema`/],
      [appFile("shrunk.ts", goodApp.replace(", tags: defineTable({ name: v.string() })", "")), /\[SCHEMA_CHANGE_REFUSED\] .*table tags \(table number 2\) exists in the deployment but not in the schema/],
    ];
    for (const [file, message] of cases) {
      const run = await cairn(["serve", "--port", "0", "--store", store, "--local", local, "--app", file], /is the writer/);
      expect(run.code, file).toBe(1);
      expect(run.stderr, file).toMatch(message);
    }
  });
});
