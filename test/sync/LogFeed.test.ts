/**
 * Scenario: an admin session follows the node's function log through a LogFeed on a
 * manual clock. It gets the ring's newest entries at once, then new ones in frames at
 * most every 250 ms, each of at most 200 entries (and 1 MiB); a flood of 100,000 entries
 * keeps at most 1,000 waiting, the oldest waiting ones skipped and counted in `dropped`.
 * Stopping frees the timer and the ring subscription.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import type { FunctionLogEntry } from "../../src/functions/index.js";
import { LogFeed, LogRing, type LogEntriesFrame } from "../../src/sync/index.js";

function entry(text = "hi"): FunctionLogEntry {
  return { time: 1, requestId: "0123456789abcdef", path: "a:b", kind: "query", level: "info", outcome: "ok", durationMs: 0, lines: [{ level: "log", text, time: 1 }] };
}

function follow(ring: LogRing) {
  const clock = new ManualClock();
  const frames: LogEntriesFrame[] = [];
  const feed = new LogFeed(ring, clock, (frame) => frames.push(frame));
  return { clock, frames, feed };
}

const ids = (frame: LogEntriesFrame | undefined) => frame?.entries.map((sent) => sent.id);

describe("LogFeed", () => {
  it("sends the newest 200 of the ring at once, then new entries at most every 250 ms", () => {
    const ring = new LogRing();
    for (let index = 0; index < 300; index++) ring.add(entry());
    const { clock, frames, feed } = follow(ring);
    feed.start();
    expect(frames).toHaveLength(1);
    expect(frames[0]!.entries).toHaveLength(200);
    expect(frames[0]!.entries[0]!.id).toBe(101);
    expect(frames[0]!.dropped).toBe(0);

    ring.add(entry());
    ring.add(entry());
    expect(frames).toHaveLength(1);
    clock.advance(249);
    expect(frames).toHaveLength(1);
    clock.advance(1);
    expect(frames).toHaveLength(2);
    expect(frames[1]).toEqual({ type: "LogEntries", entries: ring.newest(2), dropped: 0 });
    // Nothing new: no frame, no timer.
    clock.advance(10_000);
    expect(frames).toHaveLength(2);
    expect(clock.pendingSleepers).toBe(0);
    // The next entry waits at most 250 ms from its arrival.
    ring.add(entry());
    clock.advance(250);
    expect(ids(frames[2])).toEqual([303]);
  });

  it("an empty ring still answers at once (the subscriber knows it is following)", () => {
    const { frames, feed } = follow(new LogRing());
    feed.start();
    expect(frames).toEqual([{ type: "LogEntries", entries: [], dropped: 0 }]);
  });

  it("a backlog goes out 200 entries a frame, one frame per 250 ms, in order", () => {
    const ring = new LogRing();
    const { clock, frames, feed } = follow(ring);
    feed.start();
    for (let index = 0; index < 450; index++) ring.add(entry());
    clock.advance(250);
    clock.advance(250);
    clock.advance(250);
    clock.advance(250);
    expect(frames.slice(1).map((frame) => frame.entries.length)).toEqual([200, 200, 50]);
    expect(frames.slice(1).flatMap((frame) => ids(frame))).toEqual(Array.from({ length: 450 }, (_, index) => index + 1));
    expect(clock.pendingSleepers).toBe(0);
  });

  it("a flood of 100,000 entries keeps at most 1,000 waiting and counts the skipped ones", () => {
    const ring = new LogRing();
    const { clock, frames, feed } = follow(ring);
    feed.start();
    let mostWaiting = 0;
    for (let index = 0; index < 100_000; index++) {
      ring.add(entry());
      mostWaiting = Math.max(mostWaiting, feed.waiting);
    }
    expect(mostWaiting).toBe(1_000);
    expect(feed.dropped).toBe(99_000);
    expect(frames).toHaveLength(1);
    for (let flush = 0; flush < 10; flush++) clock.advance(250);
    const sent = frames.slice(1);
    expect(sent.map((frame) => frame.entries.length)).toEqual([200, 200, 200, 200, 200]);
    expect(sent.every((frame) => frame.dropped === 99_000)).toBe(true);
    // The newest 1,000 arrive, in order.
    expect(sent.flatMap((frame) => ids(frame))).toEqual(Array.from({ length: 1_000 }, (_, index) => 99_001 + index));
    // A flood mid-stream keeps counting: `dropped` never goes down.
    for (let index = 0; index < 1_500; index++) ring.add(entry());
    clock.advance(250);
    expect(frames.at(-1)!.dropped).toBe(99_500);
  });

  it("frames and the waiting buffer are bounded in bytes too: large entries go one or two a frame", () => {
    const ring = new LogRing({ bytesMax: 64 * 1024 * 1024 });
    const { clock, frames, feed } = follow(ring);
    feed.start();
    const big = "z".repeat(400 * 1024);
    for (let index = 0; index < 30; index++) ring.add(entry(big));
    // 8 MiB of waiting entries at most: ~20 of 400 KiB.
    expect(feed.waiting).toBeLessThanOrEqual(21);
    expect(feed.dropped).toBe(30 - feed.waiting);
    clock.advance(250);
    const frameBytes = Buffer.byteLength(JSON.stringify(frames[1]!.entries));
    expect(frames[1]!.entries.length).toBe(2);
    expect(frameBytes).toBeLessThanOrEqual(1024 * 1024);
  });

  it("stop ends the frames, frees the timer and the ring subscription; a second start is refused", () => {
    const ring = new LogRing();
    const { clock, frames, feed } = follow(ring);
    feed.start();
    ring.add(entry());
    expect(clock.pendingSleepers).toBe(1);
    feed.stop();
    expect(clock.pendingSleepers).toBe(0);
    ring.add(entry());
    clock.advance(1_000);
    expect(frames).toHaveLength(1);
    expect(feed.waiting).toBe(0);
    feed.stop();
    expect(() => feed.start()).toThrow(expect.objectContaining({ code: "INTERNAL" }));
  });

  it("a send that throws during a flush ends the feed (its session is gone)", () => {
    const ring = new LogRing();
    const clock = new ManualClock();
    let sends = 0;
    const feed = new LogFeed(ring, clock, () => {
      sends++;
      if (sends > 1) throw new Error("socket closed");
    });
    feed.start();
    ring.add(entry());
    clock.advance(250);
    ring.add(entry());
    clock.advance(250);
    expect(sends).toBe(2);
    expect(clock.pendingSleepers).toBe(0);
  });
});
