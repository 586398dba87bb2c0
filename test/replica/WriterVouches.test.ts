/**
 * WriterVouches: what a writer's hints vouched for, and what it announced it is
 * verifying. The waits run on a manual clock, so "a vouch that never comes" is a clock
 * step, not a timing.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { WriterVouches } from "../../src/replica/WriterVouches.js";
import { turns } from "./replicaSupport.js";

const hash = (n: number) => n.toString(16).padStart(64, "0");

describe("WriterVouches", () => {
  it("a vouch settles a wait for its announcement at once; the newest vouched or announced seqno bounds a round", async () => {
    const clock = new ManualClock();
    const vouches = new WriterVouches(clock, 1_000);
    vouches.announce(5);
    vouches.announce(6);
    expect(vouches.expected(5)).toBe(true);
    expect(vouches.newest(0, 100)).toBe(6);
    expect(vouches.newest(0, 5)).toBe(5);
    let settled = false;
    const waiting = vouches.settled([5, 6]).then(() => (settled = true));
    vouches.vouch(5, hash(5));
    await turns();
    expect(settled).toBe(false); // 6 is still announced
    vouches.vouch(6, hash(6));
    await waiting;
    expect([vouches.hashAt(5), vouches.hashAt(6), vouches.expected(6)]).toEqual([hash(5), hash(6), false]);
    // An announcement after the vouch changes nothing.
    vouches.announce(6);
    expect(vouches.expected(6)).toBe(false);
  });

  it("an announcement expires after expectWaitMs: the wait ends and it no longer bounds a round", async () => {
    const clock = new ManualClock();
    const vouches = new WriterVouches(clock, 1_000);
    vouches.announce(3);
    let settled = false;
    const waiting = vouches.settled([3]).then(() => (settled = true));
    clock.advance(999);
    await turns();
    expect(settled).toBe(false);
    clock.advance(1);
    await waiting;
    expect(vouches.expected(3)).toBe(false);
    expect(vouches.newest(0, 10)).toBeNull();
    // A fresh announcement of another seqno waits its own full interval.
    vouches.announce(4);
    clock.advance(500);
    expect(vouches.expected(4)).toBe(true);
  });

  it("forgets what lies below the reader's position, ends waits on it, and keeps at most entriesMax of each kind", async () => {
    const clock = new ManualClock();
    const vouches = new WriterVouches(clock, 1_000, 3);
    for (let seqno = 1; seqno <= 5; seqno++) vouches.vouch(seqno, hash(seqno));
    expect([1, 2, 3, 4, 5].map((seqno) => vouches.hashAt(seqno) !== undefined)).toEqual([false, false, true, true, true]);
    vouches.announce(7);
    const waiting = vouches.settled([7]);
    vouches.forgetBelow(8);
    await waiting;
    expect(vouches.size).toBe(0);
    // stop: every wait ends at once.
    vouches.announce(9);
    const stopped = vouches.settled([9]);
    vouches.settleAll();
    await stopped;
    expect(vouches.expected(9)).toBe(false);
  });
});
