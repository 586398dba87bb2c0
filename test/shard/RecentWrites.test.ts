/**
 * Scenario: the indexed optimistic-concurrency check. For random streams of committed
 * units (documents, index keys and receipts, with eviction by count, by time and by keys
 * held, never more than its bound) and random read sets at random read timestamps,
 * RecentWrites.touches (the index) must answer exactly
 * what the brute-force predicate over every write since readTs answers, including
 * "conflict" for any readTs below the eviction horizon.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { type DocumentId, newDocumentId } from "../../src/model/DocumentId.js";
import { compareBytes } from "../../src/model/compareBytes.js";
import { encodeIndexKey } from "../../src/model/IndexKey.js";
import { RecentWrites } from "../../src/shard/RecentWrites.js";
import type { ReadSet, WrittenKey } from "../../src/shard/WriteUnit.js";
import { keyString } from "../../src/model/keyString.js";

function indexKey(indexId: number, key: Uint8Array): WrittenKey {
  return { kind: "index", indexId, key, name: keyString(key) };
}

const SEEDS = 60;

function covers(readSet: ReadSet, key: WrittenKey): boolean {
  if (key.kind === "document") return (readSet.documents ?? []).includes(key.id);
  if (key.kind === "receipt") return (readSet.receipts ?? []).some((receipt) => receipt.clientId === key.clientId && receipt.seq === key.seq);
  return (readSet.indexRanges ?? []).some(
    (range) => range.indexId === key.indexId && compareBytes(key.key, range.start) >= 0 && (range.end === null || compareBytes(key.key, range.end) < 0),
  );
}

describe("RecentWrites", () => {
  it(`answers read sets through its index exactly as the predicate does, over ${SEEDS} seeds`, () => {
    let conflicts = 0;
    let clean = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = new SeededRandom(seed);
      const ids: DocumentId[] = Array.from({ length: 12 }, () => newDocumentId(1, random));
      const key = () => encodeIndexKey([randomInt(random, 40)]);
      // Evicting by units, by age and by written keys, whichever binds first.
      const keysMax = 4 + randomInt(random, 60);
      const recent = new RecentWrites(5 + randomInt(random, 40), 50 + randomInt(random, 400), keysMax);
      let ts = 0;
      for (let step = 0; step < 300; step++) {
        if (random.float() < 0.5) {
          ts += 1 + randomInt(random, 5);
          const keys: WrittenKey[] = [];
          for (let n = 0; n < 1 + randomInt(random, 3); n++) {
            const pick = random.float();
            keys.push(
              pick < 0.4
                ? { kind: "document", tableNumber: 1, id: ids[randomInt(random, ids.length)]! }
                : pick < 0.8
                  ? indexKey(1 + randomInt(random, 2), key())
                  : { kind: "receipt", clientId: `c${randomInt(random, 2)}`, seq: randomInt(random, 3) },
            );
          }
          recent.add(ts, keys);
          expect(recent.keysHeld).toBeLessThanOrEqual(keysMax);
          continue;
        }
        const readSet: ReadSet = {
          documents: Array.from({ length: randomInt(random, 3) }, () => ids[randomInt(random, ids.length)]!),
          indexRanges: Array.from({ length: randomInt(random, 3) }, () => {
            const [a, b] = [key(), key()].sort(compareBytes);
            return { indexId: 1 + randomInt(random, 2), start: a!, end: random.float() < 0.2 ? null : b! };
          }),
          receipts: Array.from({ length: randomInt(random, 2) }, () => ({ clientId: `c${randomInt(random, 2)}`, seq: randomInt(random, 3) })),
        };
        const readTs = Math.max(0, ts - randomInt(random, 60));
        const expected = recent.conflicts(readTs, (written) => covers(readSet, written));
        expect(recent.touches(readTs, readSet), `seed ${seed} step ${step}`).toBe(expected);
        if (expected) conflicts++;
        else clean++;
      }
    }
    expect(conflicts).toBeGreaterThan(100);
    expect(clean).toBeGreaterThan(100);
  });
});
