/**
 * Scenario: subscriptions register read ranges and commits ask which of them a written
 * key or range touches. Many seeded runs of thousands of random inserts, removes and
 * point/range queries (empty ranges, unbounded ends, duplicates, keys that are prefixes
 * of one another, several keyspaces) are checked against a brute-force list, with the
 * tree's invariants and AVL height bound verified along the way. Any failing seed is
 * printed and replays exactly.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import type { IntervalHandle } from "../../src/model/IntervalIndex.js";
import { IntervalIndex } from "../../src/model/IntervalIndex.js";
import type { KeyRange } from "../../src/model/KeyRange.js";
import { keyRange, pointRange, rangeContains, rangesOverlap } from "../../src/model/KeyRange.js";
import { codeOf } from "../support/errorCode.js";

const KEYSPACES = ["index:1", "index:2", "table:1"];
/** A tiny alphabet keeps prefixes, equal keys and 0x00/0xFF edges frequent. */
const KEY_BYTES = [0x00, 0x01, 0x80, 0xfe, 0xff];

function randomKey(random: SeededRandom): Uint8Array {
  return Uint8Array.from({ length: randomInt(random, 4) }, () => KEY_BYTES[randomInt(random, KEY_BYTES.length)]!);
}

function randomRange(random: SeededRandom, keyspace: string): KeyRange {
  const a = randomKey(random);
  const roll = random.float();
  if (roll < 0.1) return keyRange(keyspace, a, null);
  if (roll < 0.2) return keyRange(keyspace, a, a); // empty
  if (roll < 0.3) return pointRange(keyspace, a);
  const b = randomKey(random);
  return Buffer.compare(a, b) <= 0 ? keyRange(keyspace, a, b) : keyRange(keyspace, b, a);
}

/** The AVL bound: height <= 1.4405 log2(n + 2) - 0.3277. */
function avlHeightMax(count: number): number {
  return Math.floor(1.4405 * Math.log2(count + 2) - 0.3277);
}

interface Stored {
  readonly handle: IntervalHandle;
  readonly range: KeyRange;
  readonly payload: number;
}

function sortedNumbers(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

function runSeed(seed: number, operations: number): void {
  const random = new SeededRandom(seed);
  const index = new IntervalIndex<number>();
  const live: Stored[] = [];
  let payloadNext = 0;
  for (let step = 0; step < operations; step++) {
    const keyspace = KEYSPACES[randomInt(random, KEYSPACES.length)]!;
    const roll = random.float();
    // Insert-heavy at first, balanced later, so the set grows and then churns.
    if (roll < (step < operations / 3 ? 0.6 : 0.35)) {
      const reuse = live.length > 0 && random.float() < 0.1;
      const range = reuse ? live[randomInt(random, live.length)]!.range : randomRange(random, keyspace);
      const payload = payloadNext++;
      live.push({ handle: index.insert(range, payload), range, payload });
    } else if (roll < 0.7) {
      if (live.length === 0) continue;
      const [removed] = live.splice(randomInt(random, live.length), 1);
      index.remove(removed!.handle);
    } else if (roll < 0.85) {
      const key = randomKey(random);
      const expected = live.filter((entry) => rangeContains(entry.range, keyspace, key)).map((entry) => entry.payload);
      const actual = index.overlapping(keyspace, key);
      expect(sortedNumbers(actual), `seed ${seed} step ${step} point`).toEqual(sortedNumbers(expected));
    } else {
      const query = randomRange(random, keyspace);
      const expected = live.filter((entry) => rangesOverlap(entry.range, query)).map((entry) => entry.payload);
      expect(sortedNumbers(index.overlapping(query)), `seed ${seed} step ${step} range`).toEqual(sortedNumbers(expected));
    }
    expect(index.size).toBe(live.length);
    if (step % 97 === 0) checkShape(index, live, seed);
  }
  checkShape(index, live, seed);
  for (const entry of live) index.remove(entry.handle);
  expect(index.size).toBe(0);
  index.checkInvariants();
}

function checkShape(index: IntervalIndex<number>, live: readonly Stored[], seed: number): void {
  index.checkInvariants();
  for (const keyspace of KEYSPACES) {
    const count = live.filter((entry) => entry.range.keyspace === keyspace).length;
    const height = index.heightOf(keyspace);
    expect(height, `seed ${seed} ${keyspace} with ${count} ranges`).toBeLessThanOrEqual(avlHeightMax(count));
  }
}

describe("IntervalIndex against a brute-force list", () => {
  it("agrees over 60 seeds of 3000 random operations each", () => {
    for (let seed = 1; seed <= 60; seed++) runSeed(seed, 3000);
  });

  it("agrees over one long run of 20000 operations", () => {
    runSeed(1_000_003, 20_000);
  });
});

describe("IntervalIndex", () => {
  it("stays within the AVL height bound when ranges arrive in key order", () => {
    const index = new IntervalIndex<number>();
    const handles: IntervalHandle[] = [];
    for (let count = 0; count < 10_000; count++) {
      const start = Buffer.alloc(4);
      start.writeUInt32BE(count);
      handles.push(index.insert(keyRange("index:1", start, null), count));
    }
    index.checkInvariants();
    expect(index.heightOf("index:1")).toBeLessThanOrEqual(avlHeightMax(10_000));
    // Removing every other one, in order, also keeps it balanced.
    for (let count = 0; count < 10_000; count += 2) index.remove(handles[count]!);
    index.checkInvariants();
    expect(index.heightOf("index:1")).toBeLessThanOrEqual(avlHeightMax(5_000));
    expect(index.overlapping("index:1", Buffer.from([0, 0, 0, 4]))).toEqual([1, 3]);
  });

  it("keeps duplicates apart and reports each once per handle", () => {
    const index = new IntervalIndex<string>();
    const range = keyRange("index:1", Uint8Array.of(1), Uint8Array.of(3));
    const first = index.insert(range, "s1");
    index.insert(range, "s1");
    index.insert(range, "s2");
    expect(index.overlapping("index:1", Uint8Array.of(2)).sort()).toEqual(["s1", "s1", "s2"]);
    index.remove(first);
    expect(index.overlapping(range).sort()).toEqual(["s1", "s2"]);
  });

  it("answers half-open: the end is excluded, the start included, empty ranges match nothing", () => {
    const index = new IntervalIndex<string>();
    index.insert(keyRange("index:1", Uint8Array.of(1), Uint8Array.of(2)), "a");
    index.insert(keyRange("index:1", Uint8Array.of(5), Uint8Array.of(5)), "empty");
    index.insert(keyRange("index:1", Uint8Array.of(2), null), "tail");
    expect(index.overlapping("index:1", Uint8Array.of(1))).toEqual(["a"]);
    expect(index.overlapping("index:1", Uint8Array.of(1, 0xff, 0xff))).toEqual(["a"]);
    expect(index.overlapping("index:1", Uint8Array.of(2))).toEqual(["tail"]);
    expect(index.overlapping("index:1", Uint8Array.of(5))).toEqual(["tail"]);
    expect(index.overlapping("index:1", Uint8Array.of(0))).toEqual([]);
    expect(index.overlapping(keyRange("index:1", Uint8Array.of(0), Uint8Array.of(1)))).toEqual([]);
    expect(index.overlapping(keyRange("index:1", Uint8Array.of(1), Uint8Array.of(1)))).toEqual([]);
    expect(index.overlapping(keyRange("index:1", Uint8Array.of(0), null))).toEqual(["a", "tail"]);
    expect(index.overlapping(keyRange("index:2", Uint8Array.of(0), null))).toEqual([]);
  });

  it("copies ranges on insert, so a caller reusing its buffer changes nothing", () => {
    const index = new IntervalIndex<string>();
    const start = Uint8Array.of(1);
    const end = Uint8Array.of(2);
    index.insert(keyRange("index:1", start, end), "a");
    index.insert(keyRange("index:1", Uint8Array.of(0), Uint8Array.of(1, 5)), "b");
    start[0] = 9;
    end[0] = 10;
    expect(index.overlapping("index:1", Uint8Array.of(1))).toEqual(["b", "a"]);
    expect(index.overlapping("index:1", Uint8Array.of(9))).toEqual([]);
    index.checkInvariants();
  });

  it("refuses an invalid range and changes nothing", () => {
    const index = new IntervalIndex<string>();
    const bad = { keyspace: "index:1", start: Uint8Array.of(2), end: Uint8Array.of(1) };
    expect(codeOf(() => index.insert(bad, "x"))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => index.overlapping(bad))).toBe("KEY_RANGE_INVALID");
    expect(index.size).toBe(0);
    index.checkInvariants();
  });

  it("treats removing an unknown, removed or foreign handle as an assertion failure", () => {
    const index = new IntervalIndex<string>();
    const other = new IntervalIndex<string>();
    const range = keyRange("index:1", Uint8Array.of(1), null);
    const handle = index.insert(range, "a");
    const foreign = other.insert(range, "b");
    expect(codeOf(() => index.remove(foreign))).toBe("INTERNAL");
    expect(codeOf(() => index.remove({ id: handle.id }))).toBe("INTERNAL");
    index.remove(handle);
    expect(codeOf(() => index.remove(handle))).toBe("INTERNAL");
    expect(index.size).toBe(0);
    expect(other.size).toBe(1);
    expect(index.heightOf("index:1")).toBe(0);
  });
});
