/**
 * Scenario: a node's function log ring takes entries as calls end. It numbers them, keeps
 * the newest within its count and byte bounds (entries with 1 MiB of text cannot grow it
 * past its bytes), counts what fell out, and answers the logs route's filters (function
 * path or module prefix, lowest level, case-insensitive text in path, request id, lines
 * and error) newest last, refusing bad filters with INVALID_ARGUMENT.
 */
import { describe, expect, it } from "vitest";
import type { FunctionLogEntry } from "../../src/functions/index.js";
import { LogRing } from "../../src/sync/index.js";

let requestCounter = 0;

function entry(overrides: Partial<FunctionLogEntry> = {}): FunctionLogEntry {
  requestCounter++;
  return {
    time: 1_700_000_000_000 + requestCounter,
    requestId: `req${String(requestCounter).padStart(13, "0")}`,
    path: "messages:list",
    kind: "query",
    level: "info",
    outcome: "ok",
    durationMs: 1,
    lines: [],
    ...overrides,
  };
}

function bigEntry(chars: number): FunctionLogEntry {
  return entry({ lines: [{ level: "log", text: "y".repeat(chars), time: 1 }] });
}

describe("LogRing", () => {
  it("numbers entries from 1 and keeps the newest within its count", () => {
    const ring = new LogRing({ entriesMax: 3 });
    const added = [1, 2, 3, 4, 5].map(() => ring.add(entry()));
    expect(added.map((taken) => taken.id)).toEqual([1, 2, 3, 4, 5]);
    expect(ring.size).toBe(3);
    expect(ring.dropped).toBe(2);
    expect(ring.newest(10).map((kept) => kept.id)).toEqual([3, 4, 5]);
    expect(ring.newest(2).map((kept) => kept.id)).toEqual([4, 5]);
    expect(ring.query()).toEqual({ entries: ring.newest(3), dropped: 2 });
  });

  it("keeps the entries' JSON within its bytes: 1 MiB entries evict the oldest, and one larger than the ring is not kept", () => {
    const bytesMax = 3 * 1024 * 1024;
    const ring = new LogRing({ bytesMax });
    for (let index = 0; index < 10; index++) {
      ring.add(bigEntry(1024 * 1024 - 500));
      expect(ring.bytes).toBeLessThanOrEqual(bytesMax);
    }
    expect(ring.size).toBe(3);
    expect(ring.dropped).toBe(7);
    const seen: number[] = [];
    ring.subscribe((taken) => seen.push(taken.id));
    const tooBig = ring.add(bigEntry(4 * 1024 * 1024));
    // The listeners saw it; the ring let it and everything older go.
    expect(seen).toEqual([tooBig.id]);
    expect(ring.size).toBe(0);
    expect(ring.bytes).toBe(0);
    expect(ring.dropped).toBe(11);
    ring.add(entry());
    expect(ring.size).toBe(1);
  });

  it("default bounds: 2,000 entries, 8 MiB; a long flood moves through without growing it", () => {
    const ring = new LogRing();
    for (let index = 0; index < 50_000; index++) ring.add(entry());
    expect(ring.size).toBe(2_000);
    expect(ring.dropped).toBe(48_000);
    expect(ring.newest(1)[0]!.id).toBe(50_000);
    for (let index = 0; index < 20; index++) ring.add(bigEntry(1024 * 1024));
    expect(ring.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(ring.size).toBe(7);
  });

  it("filters by function path or module prefix, lowest level and text; newest last; limit", () => {
    const ring = new LogRing();
    ring.add(entry({ path: "messages:list" }));
    ring.add(entry({ path: "messages:send", kind: "mutation", level: "warn", lines: [{ level: "warn", text: "Slow Disk ahead", time: 1 }] }));
    ring.add(entry({ path: "messagesArchive:list" }));
    ring.add(
      entry({
        path: "users:get",
        level: "error",
        outcome: "error",
        requestId: "abcdef0123456789",
        error: { code: "FUNCTION_FAILED", message: "users:get failed; request id abcdef0123456789", stack: "TypeError: Kaboom\n    at handler (app.ts:3:9)" },
      }),
    );
    ring.add(entry({ path: "messages:send", kind: "mutation" }));
    const ids = (query: Parameters<LogRing["query"]>[0]) => ring.query(query).entries.map((found) => found.id);
    expect(ids({ function: "messages:send" })).toEqual([2, 5]);
    expect(ids({ function: "messages:" })).toEqual([1, 2, 5]);
    expect(ids({ function: "messages" })).toEqual([]);
    expect(ids({ level: "info" })).toEqual([1, 2, 3, 4, 5]);
    expect(ids({ level: "warn" })).toEqual([2, 4]);
    expect(ids({ level: "error" })).toEqual([4]);
    expect(ids({ text: "slow disk" })).toEqual([2]);
    expect(ids({ text: "KABOOM" })).toEqual([4]);
    expect(ids({ text: "app.ts:3" })).toEqual([4]);
    expect(ids({ text: "ABCDEF01" })).toEqual([4]);
    expect(ids({ text: "archive" })).toEqual([3]);
    expect(ids({ function: "messages:", level: "warn", text: "disk" })).toEqual([2]);
    expect(ids({ limit: 2 })).toEqual([4, 5]);
    expect(ids({ function: "messages:", limit: 1 })).toEqual([5]);
    // Empty filters (a route's `?function=&level=&text=`) filter nothing.
    expect(ids({ function: "", level: "", text: "" })).toEqual([1, 2, 3, 4, 5]);
  });

  it("answers at most 1,000 entries, 200 by default", () => {
    const ring = new LogRing();
    for (let index = 0; index < 1_500; index++) ring.add(entry());
    expect(ring.query().entries).toHaveLength(200);
    expect(ring.query().entries.at(-1)!.id).toBe(1_500);
    expect(ring.query({ limit: 1_000 }).entries).toHaveLength(1_000);
    expect(ring.query({ limit: 1_000 }).entries[0]!.id).toBe(501);
  });

  it("refuses bad filters and bounds with INVALID_ARGUMENT", () => {
    const ring = new LogRing();
    for (const query of [
      { limit: 0 },
      { limit: 1_001 },
      { limit: 2.5 },
      { limit: "10" },
      { limit: Number.NaN },
      { level: "debug" },
      { level: "WARN" },
      { function: 7 },
      { text: "x".repeat(1025) },
      { text: { toLowerCase: () => "" } },
    ]) {
      expect(() => ring.query(query as never), JSON.stringify(query)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(() => new LogRing({ entriesMax: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => new LogRing({ bytesMax: Number.POSITIVE_INFINITY })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => ring.newest(-1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("hands every entry to its listeners in order until they unsubscribe; a throwing listener does not keep others from it", () => {
    const ring = new LogRing();
    const first: number[] = [];
    const second: number[] = [];
    const stopFirst = ring.subscribe((taken, bytes) => {
      expect(bytes).toBe(Buffer.byteLength(JSON.stringify(taken)));
      first.push(taken.id);
    });
    const stopThrowing = ring.subscribe(() => {
      throw new Error("listener bug");
    });
    ring.subscribe((taken) => second.push(taken.id));
    expect(() => ring.add(entry())).toThrow("listener bug");
    stopThrowing();
    ring.add(entry());
    stopFirst();
    ring.add(entry());
    expect(first).toEqual([1, 2]);
    expect(second).toEqual([1, 2, 3]);
    // The entry that met the throwing listener was kept all the same.
    expect(ring.size).toBe(3);
  });

  it("newest(n, bytesMax) gives as many of the newest as fit, and always the newest", () => {
    const ring = new LogRing();
    ring.add(bigEntry(1000));
    ring.add(bigEntry(1000));
    ring.add(bigEntry(5000));
    expect(ring.newest(10, 2000).map((kept) => kept.id)).toEqual([3]);
    expect(ring.newest(10, 7000).map((kept) => kept.id)).toEqual([2, 3]);
    expect(ring.newest(0)).toEqual([]);
  });
});
