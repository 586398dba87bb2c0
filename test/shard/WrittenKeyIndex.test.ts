/**
 * The written-key index keeps its index keys sorted lazily (only when a range is checked).
 * Random streams of keys entering, changing and leaving — long stretches without a range
 * check, so the keys waiting to be sorted pile up and are compacted, then range checks —
 * must answer every range exactly as a plain map of the keys held does.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { compareBytes } from "../../src/model/compareBytes.js";
import { encodeIndexKey } from "../../src/model/IndexKey.js";
import { keyString } from "../../src/model/keyString.js";
import type { WrittenKey } from "../../src/shard/WriteUnit.js";
import { WrittenKeyIndex } from "../../src/shard/WrittenKeyIndex.js";

describe("WrittenKeyIndex", () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`answers index ranges as a plain map does, keys sorted lazily (seed ${seed})`, () => {
      const random = new SeededRandom(seed);
      const index = new WrittenKeyIndex();
      const model = new Map<string, { key: Uint8Array; indexId: number; n: number; count: number }>();
      const keyOf = (indexId: number, n: number): Extract<WrittenKey, { kind: "index" }> => {
        const key = encodeIndexKey([n]);
        return { kind: "index", indexId, key, name: keyString(key) };
      };
      let checks = 0;
      let hits = 0;
      for (let step = 0; step < 60_000; step++) {
        // Few keys held at a time among many that pass through (as in the recent writes of
        // a busy shard): most keys waiting to be sorted are gone by the next range check.
        const leaving = model.size > 0 && (model.size > 300 || random.float() < 0.3) ? [...model.values()][randomInt(random, model.size)]! : null;
        const indexId = leaving?.indexId ?? randomInt(random, 2);
        const n = leaving?.n ?? randomInt(random, 30_000);
        const key = keyOf(indexId, n);
        const modelKey = `${key.indexId}:${key.name}`;
        const held = model.get(modelKey);
        if (leaving === null) {
          index.update([key], (count) => (count ?? 0) + 1);
          model.set(modelKey, { key: key.key, indexId, n, count: (held?.count ?? 0) + 1 });
        } else if (random.float() < 0.5) {
          index.update([key], (count) => (count === undefined || count <= 1 ? undefined : count - 1));
          if (held !== undefined && held.count > 1) held.count--;
          else model.delete(modelKey);
        } else {
          index.update([key], () => undefined);
          model.delete(modelKey);
        }
        // Range checks come in bursts, with long stretches between them.
        if (step % 10_000 < 9_000) continue;
        const start = encodeIndexKey([randomInt(random, 30_000)]);
        const end = random.float() < 0.1 ? null : encodeIndexKey([randomInt(random, 30_000)]);
        const threshold = 1 + randomInt(random, 3);
        const expected = [...model.values()].some(
          (entry) => entry.indexId === indexId && compareBytes(entry.key, start) >= 0 && (end === null || compareBytes(entry.key, end) < 0) && entry.count >= threshold,
        );
        expect(index.touches({ indexRanges: [{ indexId, start, end }] }, (count) => count >= threshold)).toBe(expected);
        checks++;
        if (expected) hits++;
      }
      expect(index.size).toBe(model.size);
      expect(hits).toBeGreaterThan(checks / 10);
      expect(hits).toBeLessThan(checks);
    });
  }
});
