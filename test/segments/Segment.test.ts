/**
 * Scenario: segments as stored objects — round trip with and without compression,
 * every defect (flipped byte, wrong address, bad header, records outside the ts range)
 * refused with SEGMENT_INVALID, and the validity rule of the log: chain, epochs,
 * fenced leftovers skipped, time never going back.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { LOG_START, LogValidator } from "../../src/segments/LogValidator.js";
import { EMPTY_RECORD_BATCH, type RecordBatch } from "../../src/segments/recordCodec.js";
import { decodeSegment, encodeSegment, type SegmentHeader } from "../../src/segments/Segment.js";

const random = new SeededRandom(7);
const address = { deploymentId: "d1", shard: 0, seqno: 0 };

function records(count: number, ts: number, valueBytes = 20): RecordBatch {
  const revisions = Array.from({ length: count }, () => ({
    tableNumber: 3,
    id: newDocumentId(3, random),
    ts,
    value: JSON.stringify({ text: "x".repeat(valueBytes) }),
    prevTs: null,
  }));
  return {
    revisions,
    indexUpdates: revisions.map((revision) => ({ indexId: 9, key: new Uint8Array([1, 2, 0, 255]), ts, docId: revision.id })),
    receipts: [{ clientId: "client-é", seq: 12, ts, result: '{"ok":true}', route: null }],
  };
}

function header(overrides: Partial<SegmentHeader> = {}): SegmentHeader {
  return {
    deploymentId: "d1",
    shard: 0,
    seqno: 0,
    epoch: 1,
    kind: "data",
    count: 1,
    minTs: 100,
    maxTs: 100,
    prevHash: null,
    writer: "node-a",
    ...overrides,
  };
}

describe("segment format", () => {
  it("round-trips small (plain) and large (zlib) segments exactly", () => {
    for (const [count, valueBytes] of [[2, 10], [500, 200]] as const) {
      const batch = records(count, 100, valueBytes);
      const segment = encodeSegment(header(), batch);
      const decoded = decodeSegment(segment.bytes, address);
      expect(decoded.header).toEqual(segment.header);
      expect(decoded.records).toEqual(batch);
      expect(decoded.hash).toBe(segment.hash);
    }
    const large = encodeSegment(header(), records(500, 100, 200));
    expect(large.bytes.byteLength).toBeLessThan(500 * 200);
  });

  it("refuses a flipped byte anywhere with SEGMENT_INVALID", () => {
    const segment = encodeSegment(header(), records(3, 100));
    for (const offset of [0, 5, 12, segment.bytes.length >> 1, segment.bytes.length - 1]) {
      const corrupted = Buffer.from(segment.bytes);
      corrupted[offset] = corrupted[offset]! ^ 0x40;
      expect(() => decodeSegment(corrupted, address)).toThrow(expect.objectContaining({ code: "SEGMENT_INVALID" }));
    }
  });

  it("refuses a segment stored under another address or deployment", () => {
    const segment = encodeSegment(header(), records(1, 100));
    expect(() => decodeSegment(segment.bytes, { ...address, seqno: 1 })).toThrow(/names seqno 0/);
    expect(() => decodeSegment(segment.bytes, { ...address, shard: 2 })).toThrow(/names shard 0/);
    expect(() => decodeSegment(segment.bytes, { ...address, deploymentId: "d2" })).toThrow(/deployment d1/);
  });

  it("checks the header against the records before writing", () => {
    expect(() => encodeSegment(header({ minTs: 101, maxTs: 105 }), records(1, 100))).toThrow(/outside/);
    expect(() => encodeSegment(header({ kind: "fence", count: 0 }), records(1, 100))).toThrow(/must be empty/);
    expect(() => encodeSegment(header({ count: 0 }), records(1, 100))).toThrow(/no write units/);
    expect(encodeSegment(header({ kind: "tick", count: 0 }), EMPTY_RECORD_BATCH).records).toEqual(EMPTY_RECORD_BATCH);
  });
});

describe("log validity rule", () => {
  function chain() {
    const validator = new LogValidator(0, LOG_START);
    let prevHash: string | null = null;
    let seqno = 0;
    const next = (epoch: number, ts: number, kind: "data" | "fence" = "data", prev: string | null = prevHash) => {
      const segment = encodeSegment(
        header({ seqno, epoch, kind, count: kind === "data" ? 1 : 0, minTs: ts, maxTs: ts, prevHash: prev }),
        kind === "data" ? records(1, ts) : EMPTY_RECORD_BATCH,
      );
      seqno++;
      return segment;
    };
    const accept = (segment: ReturnType<typeof next>) => {
      const verdict = validator.accept(segment);
      if (verdict === "apply") prevHash = segment.hash;
      return verdict;
    };
    return { validator, next, accept, prevHash: () => prevHash };
  }

  it("applies a chained log and skips a fenced writer's leftover", () => {
    const log = chain();
    expect(log.accept(log.next(1, 10, "fence"))).toBe("apply");
    expect(log.accept(log.next(1, 20))).toBe("apply");
    expect(log.accept(log.next(2, 30, "fence"))).toBe("apply");
    // A zombie of epoch 1 wrote past the new fence: every reader skips it.
    expect(log.accept(log.next(1, 40))).toBe("skip");
    expect(log.accept(log.next(2, 50))).toBe("apply");
    expect(log.validator.position).toMatchObject({ nextSeqno: 5, highestEpoch: 2, lastMaxTs: 50 });
  });

  it("reports a valid segment that breaks the chain or goes back in time as corruption", () => {
    const log = chain();
    log.accept(log.next(1, 10, "fence"));
    expect(() => log.accept(log.next(1, 20, "data", "0".repeat(64)))).toThrow(
      expect.objectContaining({ code: "SEGMENT_CHAIN_BROKEN" }),
    );
    const again = chain();
    again.accept(again.next(1, 10, "fence"));
    expect(() => again.accept(again.next(1, 10))).toThrow(/back in time/);
  });
});
