/**
 * Scenario: what a replica prints. In steady state — a `cairn serve --replica` process
 * following a writer that commits one write after another — it applies every segment as
 * it lands and prints nothing per segment (it used to print "replaying segment N" every
 * half second under load). Replay progress is for catching up: a follower at least
 * CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN segments behind the log's tail hint reports it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN } from "../../src/base/limits.js";
import { progressReporter } from "../../src/cli/progressReporter.js";
import { ServeProcess } from "../server/serveProcess.js";

const ADMIN_KEY = "replica-logging-admin-key";
const WRITES = 30;
const root = mkdtempSync(join(tmpdir(), "cairn-replica-logging-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function call(url: string, kind: "mutation" | "query", path: string, args: unknown, extra: object = {}): Promise<{ value: unknown; ts: number }> {
  const response = await fetch(`${url}api/${kind}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args, ...extra }) });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as never;
}

describe("replica logging", () => {
  it("a replica that keeps up logs nothing per segment", { timeout: 60_000 }, async () => {
    const common = ["--store", join(root, "bucket"), "--app", "test/sync/syncApp.ts", "--port", "0"];
    const writer = await ServeProcess.start([...common, "--local", join(root, "writer")], { CAIRN_ADMIN_KEY: ADMIN_KEY });
    const replica = await ServeProcess.start([...common, "--local", join(root, "replica"), "--replica"], { CAIRN_ADMIN_KEY: ADMIN_KEY });
    try {
      const linesAtStart = replica.output.split("\n").length;
      let ts = 0;
      for (let i = 0; i < WRITES; i++) {
        ts = (await call(writer.url, "mutation", "notes:add", { channel: "steady", body: `n${i}` })).ts;
        // Spread over more than the progress throttle (500 ms): one segment at a time, as live traffic comes.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      // The replica has applied every one of them.
      const listed = await call(replica.url, "query", "notes:list", { channel: "steady" }, { minTs: ts });
      expect(listed.value).toHaveLength(WRITES);
      const printed = replica.output.split("\n").slice(linesAtStart - 1);
      expect(printed.filter((line) => /replaying segment/.test(line))).toEqual([]);
    } finally {
      await replica.stop();
      await writer.stop();
    }
  });

  it("reports replay progress while far behind the tail hint, and not when close to it", () => {
    const lines: string[] = [];
    const report = progressReporter((line) => lines.push(line));
    report({ type: "progress", shard: 0, progress: { phase: "replay", shard: 0, seqno: 5, tailHint: 5 + CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN - 1 } });
    expect(lines).toEqual([]);
    report({ type: "progress", shard: 0, progress: { phase: "replay", shard: 0, seqno: 5, tailHint: 5 + CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN } });
    expect(lines).toEqual([`shard 0: replaying segment 5 (tail hint ${5 + CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN})`]);
  });
});
