/**
 * Scenario: receipts in the record codec. A receipt is written as tag 4 with its route (8
 * bytes, or empty for a mutation without shardBy) and reads back equal; a receipt of tag
 * 3, as builds before routes wrote them, still reads, with route null; a route of any
 * other length is malformed input (RangeError), which a segment reports as SEGMENT_INVALID.
 * A receipt with an owner (and the client's floor) is written as tag 5 and reads back equal.
 */
import { describe, expect, it } from "vitest";
import { routeOfValue } from "../../src/functions/routing.js";
import type { ClientReceipt } from "../../src/model/Revision.js";
import { ROUTE_BYTES } from "../../src/model/shardFor.js";
import { ByteWriter } from "../../src/segments/ByteWriter.js";
import { encodeFramed } from "../../src/segments/framedObject.js";
import { decodeRecords, encodeRecords } from "../../src/segments/recordCodec.js";
import { decodeSegment, SEGMENT_MAGIC } from "../../src/segments/Segment.js";

const TAG_RECEIPT_WITHOUT_ROUTE = 3;
const TAG_RECEIPT = 4;

function receiptsOnly(receipts: readonly ClientReceipt[]) {
  return { revisions: [], indexUpdates: [], receipts };
}

/** A receipt's fields in the codec's layout, under `tag`, with `route` bytes when given. */
function handEncoded(tag: number, receipt: Omit<ClientReceipt, "route">, route?: Uint8Array): Buffer {
  const writer = new ByteWriter();
  writer.u8(tag);
  writer.string(receipt.clientId);
  writer.varuint(receipt.seq);
  writer.varuint(receipt.ts);
  writer.string(receipt.result);
  if (route !== undefined) writer.bytes(route);
  return Buffer.from(writer.finish());
}

describe("receipt records", () => {
  const routed: ClientReceipt = { clientId: "client-é", seq: 7, ts: 1_700_000_000_000_000, result: '{"ok":true}', route: routeOfValue("channel-1") };
  const unrouted: ClientReceipt = { clientId: "client-2", seq: 0, ts: 5, result: "null", route: null };

  it("round-trips a receipt with a route and one without, both as tag 4", () => {
    const bytes = encodeRecords(receiptsOnly([routed, unrouted]));
    expect(decodeRecords(bytes).receipts).toEqual([routed, unrouted]);
    // Both are tag 4; a null route is an empty byte string.
    expect(Buffer.from(encodeRecords(receiptsOnly([unrouted])))).toEqual(handEncoded(TAG_RECEIPT, unrouted, new Uint8Array(0)));
    expect(Buffer.from(encodeRecords(receiptsOnly([routed])))).toEqual(handEncoded(TAG_RECEIPT, routed, routed.route!));
  });

  it("reads a legacy tag-3 receipt with route null", () => {
    const legacy = Buffer.concat([handEncoded(TAG_RECEIPT_WITHOUT_ROUTE, unrouted), handEncoded(TAG_RECEIPT_WITHOUT_ROUTE, routed)]);
    const { clientId, seq, ts, result } = routed;
    expect(decodeRecords(legacy).receipts).toEqual([unrouted, { clientId, seq, ts, result, route: null }]);
  });

  it("refuses a route of any length but 0 and ROUTE_BYTES with RangeError", () => {
    for (const length of [1, ROUTE_BYTES - 1, ROUTE_BYTES + 1, 32]) {
      const bytes = handEncoded(TAG_RECEIPT, unrouted, new Uint8Array(length));
      expect(() => decodeRecords(bytes)).toThrow(RangeError);
      expect(() => decodeRecords(bytes)).toThrow(new RegExp(`route has ${ROUTE_BYTES} bytes, not ${length}`));
    }
  });

  it("reports a segment holding a bad route as SEGMENT_INVALID", () => {
    const header = {
      deploymentId: "d1", shard: 0, seqno: 0, epoch: 1, kind: "data", count: 1, minTs: 5, maxTs: 5, prevHash: null, writer: "node-a",
    };
    const payload = handEncoded(TAG_RECEIPT, unrouted, new Uint8Array(3));
    const bytes = encodeFramed(SEGMENT_MAGIC, header, payload, "none");
    expect(() => decodeSegment(bytes, { deploymentId: "d1", shard: 0, seqno: 0 })).toThrow(
      expect.objectContaining({ code: "SEGMENT_INVALID", message: expect.stringMatching(/route has 8 bytes, not 3/) }),
    );
  });

  it("round-trips a receipt with its owner and floor as tag 5", () => {
    const owned: ClientReceipt = { ...routed, owner: "user:abc", floorSeq: 5 };
    const ownedWithoutFloor: ClientReceipt = { ...unrouted, owner: "anonymous" };
    const bytes = encodeRecords(receiptsOnly([owned, ownedWithoutFloor, unrouted]));
    expect(bytes[0]).toBe(5);
    expect(decodeRecords(bytes).receipts).toEqual([owned, ownedWithoutFloor, unrouted]);
  });
});
