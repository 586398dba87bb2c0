/**
 * Scenarios: the node's shared query runs — one run per (subscription digest, identity,
 * ts) however many sessions ask; entries bounded in bytes of settled results (not only
 * in count), oldest evicted first, an evicted run re-run on the next ask; a rejected run
 * not kept; and the digest is a fixed-size key that tells path and arguments apart.
 */
import { describe, expect, it } from "vitest";
import { SharedQueryRuns, subscriptionDigest, type QueryResult } from "../../src/sync/SharedQueryRuns.js";

function result(chars: number): QueryResult {
  return { kind: "ok", payloadText: "x".repeat(chars), hash: "h", errorCode: null, readRanges: [], readTs: 1 };
}

describe("SharedQueryRuns", () => {
  it("runs a subscription once per ts and identity", async () => {
    const shared = new SharedQueryRuns();
    let runs = 0;
    const execute = async () => (runs++, result(10));
    const digest = subscriptionDigest("notes:list", '{"channel":"a"}');
    await Promise.all([shared.run(digest, "", 5, execute), shared.run(digest, "", 5, execute)]);
    expect(runs).toBe(1);
    await shared.run(digest, "token", 5, execute);
    await shared.run(digest, "", 6, execute);
    expect(runs).toBe(3);
    expect(shared.stats).toMatchObject({ hits: 1, misses: 3, entries: 3 });
  });

  it("keeps settled results within its byte bound, evicting the oldest", async () => {
    const bytesMax = 100_000;
    const shared = new SharedQueryRuns(1_000, bytesMax);
    let runs = 0;
    for (let ts = 1; ts <= 20; ts++) {
      await shared.run("d", "", ts, async () => (runs++, result(20_000)));
      expect(shared.stats.bytes).toBeLessThanOrEqual(bytesMax);
    }
    expect(shared.stats.entries).toBeLessThan(20);
    // The first was evicted: asking again runs it again.
    await shared.run("d", "", 1, async () => (runs++, result(20_000)));
    expect(runs).toBe(21);
    // A result bigger than the whole bound is handed to its callers and not kept.
    expect((await shared.run("huge", "", 1, async () => result(200_000))).payloadText).toHaveLength(200_000);
    expect(shared.stats.bytes).toBeLessThanOrEqual(bytesMax);
  });

  it("does not keep a run that rejected", async () => {
    const shared = new SharedQueryRuns();
    await expect(shared.run("d", "", 1, async () => Promise.reject(new Error("busy")))).rejects.toThrow("busy");
    await Promise.resolve();
    expect((await shared.run("d", "", 1, async () => result(1))).payloadText).toBe("x");
  });

  it("keys subscriptions by a fixed-size digest of path and arguments", () => {
    const digest = subscriptionDigest("notes:list", JSON.stringify({ channel: "x".repeat(100_000) }));
    expect(digest).toHaveLength(43);
    expect(subscriptionDigest("a", "bc")).not.toBe(subscriptionDigest("ab", "c"));
  });
});
