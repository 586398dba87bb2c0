import { z } from "zod";
import { CairnError } from "../base/index.js";
import { decodeFramed, encodeFramed, FrameError } from "./framedObject.js";
import { decodeRecords, encodeRecords, type RecordBatch } from "./recordCodec.js";

/**
 * One immutable log segment (DESIGN.md §4).
 *
 * Invariants, checked before PUT and again after GET:
 * - the header names the deployment, shard and seqno of the key it is stored under;
 * - `data` segments hold `count >= 1` write units and every record's ts lies in
 *   [minTs, maxTs]; `fence` and `tick` segments hold no records and minTs == maxTs;
 * - the object's sha256 trailer matches (see framedObject).
 */
export const SEGMENT_MAGIC = "CRNS";
export const SEGMENT_KINDS = ["data", "fence", "tick"] as const;
export type SegmentKind = (typeof SEGMENT_KINDS)[number];

/** Payloads smaller than this are stored uncompressed: zlib costs more than it saves. */
export const SEGMENT_COMPRESS_MIN_BYTES = 4096;

const segmentHeaderSchema = z.object({
  deploymentId: z.string().min(1),
  shard: z.number().int().min(0),
  seqno: z.number().int().min(0),
  epoch: z.number().int().min(1),
  kind: z.enum(SEGMENT_KINDS),
  /** Write units (mutations) in a data segment; 0 otherwise. */
  count: z.number().int().min(0),
  minTs: z.number().int().min(0),
  maxTs: z.number().int().min(0),
  /** Hash of the previous valid segment; null only for the first segment of a log. */
  prevHash: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  writer: z.string().min(1),
});

export type SegmentHeader = z.infer<typeof segmentHeaderSchema>;

export interface Segment {
  readonly header: SegmentHeader;
  readonly records: RecordBatch;
  readonly hash: string;
  readonly bytes: Buffer;
}

export interface SegmentAddress {
  readonly deploymentId: string;
  readonly shard: number;
  readonly seqno: number;
  /** Ancestors whose segments this shard's log may hold too (a branch's; Manifest.inheritedFrom). */
  readonly inheritedFrom?: readonly string[];
}

export function encodeSegment(header: SegmentHeader, records: RecordBatch): Segment {
  const checked = checkSegment(header, records, header);
  const payload = encodeRecords(records);
  const bytes = encodeFramed(
    SEGMENT_MAGIC,
    checked,
    payload,
    payload.byteLength >= SEGMENT_COMPRESS_MIN_BYTES ? "zlib" : "none",
  );
  return { header: checked, records, hash: bytes.subarray(bytes.length - 32).toString("hex"), bytes };
}

/** Parses and verifies a segment read from `address`; SEGMENT_INVALID on any defect. */
export function decodeSegment(bytes: Uint8Array, address: SegmentAddress): Segment {
  try {
    const framed = decodeFramed(SEGMENT_MAGIC, bytes);
    const parsed = segmentHeaderSchema.safeParse(framed.header);
    if (!parsed.success) throw new FrameError(`header is invalid: ${z.prettifyError(parsed.error)}`);
    const records = decodeRecords(framed.payload);
    const header = checkSegment(parsed.data, records, address);
    return { header, records, hash: framed.hash, bytes: Buffer.from(bytes) };
  } catch (error) {
    if (error instanceof CairnError) throw error;
    throw invalidSegment(address, error instanceof Error ? error.message : String(error), error);
  }
}

function checkSegment(header: SegmentHeader, records: RecordBatch, address: SegmentAddress): SegmentHeader {
  const fail = (reason: string) => {
    throw invalidSegment(address, reason);
  };
  if (header.deploymentId !== address.deploymentId && !(address.inheritedFrom ?? []).includes(header.deploymentId)) {
    fail(`belongs to deployment ${header.deploymentId}`);
  }
  if (header.shard !== address.shard) fail(`names shard ${header.shard}`);
  if (header.seqno !== address.seqno) fail(`names seqno ${header.seqno}`);
  if (header.minTs > header.maxTs) fail("minTs > maxTs");
  const recordCount = records.revisions.length + records.indexUpdates.length + records.receipts.length;
  if (header.kind === "data") {
    if (header.count < 1) fail("a data segment holds no write units");
    const outside = (ts: number) => ts < header.minTs || ts > header.maxTs;
    if (
      records.revisions.some((r) => outside(r.ts)) ||
      records.indexUpdates.some((u) => outside(u.ts)) ||
      records.receipts.some((r) => outside(r.ts))
    ) {
      fail("a record's ts lies outside [minTs, maxTs]");
    }
  } else if (header.count !== 0 || recordCount !== 0 || header.minTs !== header.maxTs) {
    fail(`a ${header.kind} segment must be empty with minTs == maxTs`);
  }
  return header;
}

function invalidSegment(address: SegmentAddress, reason: string, cause?: unknown): CairnError {
  return new CairnError("SEGMENT_INVALID", `segment ${address.seqno} of shard ${address.shard} is invalid: ${reason}`, {
    cause,
    details: { shard: address.shard, seqno: address.seqno },
  });
}
