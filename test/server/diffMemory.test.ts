/**
 * Memory of a diffed subscription (issue 30), in a child process with --expose-gc: a
 * node whose one session keeps a 500-row range current by diffs through 1,000 more
 * inserts must not keep the states each diff left behind. The shared run's cache entry
 * holds the first state; when a state held the states its steps led to strongly, that
 * entry kept every later state and every row that passed through the range alive:
 * the heap grew 25.5 MiB over these 1,000 commits before the fix, 5.0 MiB after (the
 * store's own data and histories; the same node without the subscriber grows ~4 MiB).
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("a diffed subscription's memory", () => {
  it("does not grow with the commits it has been diffed through", () => {
    const output = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", "test/server/diffMemoryChild.ts"], { encoding: "utf8", timeout: 240_000 });
    const { early, late, diffs } = JSON.parse(output.trim().split("\n").at(-1)!) as { early: number; late: number; diffs: number };
    expect(diffs).toBeGreaterThanOrEqual(1250);
    expect(late - early).toBeLessThan(12);
  }, 300_000);
});
