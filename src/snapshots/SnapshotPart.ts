import { z } from "zod";
import { CairnError } from "../base/index.js";
import { decodeFramed, decodeFramedOffThread, encodeFramed, encodeFramedOffThread, type FramedObject, decodeRecords, type RecordBatch } from "../segments/index.js";

/**
 * One part of a snapshot: a framed object (checksummed, zlib-compressed) holding a run
 * of current documents, index entries and receipts in the segment record encoding.
 */
export const SNAPSHOT_PART_MAGIC = "CRNP";

const partHeaderSchema = z.object({
  deploymentId: z.string().min(1),
  shard: z.number().int().min(0),
  seqno: z.number().int().min(0),
  part: z.number().int().min(0),
  documents: z.number().int().min(0),
  indexEntries: z.number().int().min(0),
  receipts: z.number().int().min(0),
});

export type SnapshotPartHeader = z.infer<typeof partHeaderSchema>;

export interface EncodedSnapshotPart {
  readonly bytes: Buffer;
  readonly hash: string;
}

/**
 * Encodes a part. The deflate (level 1) of an 8 MiB part takes tens of ms on the event
 * loop; it stays synchronous so that the seeded simulation, which runs snapshots in
 * virtual time, sees no work outside it (the writer yields between dump chunks).
 */
export function encodeSnapshotPart(header: SnapshotPartHeader, payload: Uint8Array): EncodedSnapshotPart {
  return encodedPart(encodeFramed(SNAPSHOT_PART_MAGIC, header, payload, "zlib"));
}

/** `encodeSnapshotPart` with the deflate off the caller's thread (restores and exports, never the engine: see above). */
export async function encodeSnapshotPartOffThread(header: SnapshotPartHeader, payload: Uint8Array): Promise<EncodedSnapshotPart> {
  return encodedPart(await encodeFramedOffThread(SNAPSHOT_PART_MAGIC, header, payload, "zlib"));
}

function encodedPart(bytes: Buffer): EncodedSnapshotPart {
  return { bytes, hash: bytes.subarray(bytes.length - 32).toString("hex") };
}

export interface DecodedSnapshotPart {
  readonly header: SnapshotPartHeader;
  readonly records: RecordBatch;
  readonly hash: string;
}

export type ExpectedPart = Omit<SnapshotPartHeader, "documents" | "indexEntries" | "receipts"> & {
  /** Ancestors whose parts this shard may read too (a branch's inherited snapshot; Manifest.inheritedFrom). */
  readonly inheritedFrom?: readonly string[];
};

/** Verifies a part read from the bucket against where it was expected; SNAPSHOT_INVALID otherwise. */
export function decodeSnapshotPart(bytes: Uint8Array, expected: ExpectedPart): DecodedSnapshotPart {
  let framed;
  try {
    framed = decodeFramed(SNAPSHOT_PART_MAGIC, bytes);
  } catch (error) {
    throw partInvalid(expected, error instanceof Error ? error.message : String(error), error);
  }
  return checkedPart(framed, expected);
}

function partInvalid(expected: Pick<SnapshotPartHeader, "shard" | "seqno" | "part">, reason: string, cause?: unknown): CairnError {
  return new CairnError("SNAPSHOT_INVALID", `snapshot ${expected.seqno} part ${expected.part} of shard ${expected.shard}: ${reason}`, {
    cause,
    details: { ...expected },
  });
}

/** A part whose checksum and header were verified, its records still encoded (see MergedDump). */
export interface EncodedSnapshotPayload {
  readonly header: SnapshotPartHeader;
  /** The records in the segment record encoding; their counts are the header's once scanned. */
  readonly payload: Buffer;
  readonly hash: string;
}

/**
 * `decodeSnapshotPart` with the checksum and inflate off the caller's thread and the
 * records left encoded: for a reader that passes most of them on as they are (a
 * restore's MergedDump) and checks their counts as it scans.
 */
export async function decodeSnapshotPayloadOffThread(bytes: Uint8Array, expected: ExpectedPart): Promise<EncodedSnapshotPayload> {
  let framed;
  try {
    framed = await decodeFramedOffThread(SNAPSHOT_PART_MAGIC, bytes);
  } catch (error) {
    throw partInvalid(expected, error instanceof Error ? error.message : String(error), error);
  }
  return { header: checkedHeader(framed, expected), payload: framed.payload, hash: framed.hash };
}

/** SNAPSHOT_INVALID for a part whose records are not what its header says (a scan's finding). */
export function snapshotPartInvalid(header: SnapshotPartHeader, reason: string, cause?: unknown): CairnError {
  return partInvalid(header, reason, cause);
}

function checkedHeader(framed: FramedObject<unknown>, expected: ExpectedPart): SnapshotPartHeader {
  const fail = (reason: string, cause?: unknown) => partInvalid(expected, reason, cause);
  const parsed = partHeaderSchema.safeParse(framed.header);
  if (!parsed.success) throw fail(`header is invalid: ${z.prettifyError(parsed.error)}`);
  const header = parsed.data;
  if (header.deploymentId !== expected.deploymentId && !(expected.inheritedFrom ?? []).includes(header.deploymentId)) {
    throw fail(`header names deploymentId ${header.deploymentId}, expected ${expected.deploymentId}`);
  }
  for (const field of ["shard", "seqno", "part"] as const) {
    if (header[field] !== expected[field]) throw fail(`header names ${field} ${header[field]}, expected ${expected[field]}`);
  }
  return header;
}

function checkedPart(framed: FramedObject<unknown>, expected: ExpectedPart): DecodedSnapshotPart {
  const fail = (reason: string, cause?: unknown) => partInvalid(expected, reason, cause);
  const header = checkedHeader(framed, expected);
  let records: RecordBatch;
  try {
    // A part's rows go into a local store or a new snapshot and are dropped: keys may be views.
    records = decodeRecords(framed.payload, { viewBytes: true });
  } catch (error) {
    throw fail(`payload is malformed: ${String(error)}`, error);
  }
  if (
    records.revisions.length !== header.documents ||
    records.indexUpdates.length !== header.indexEntries ||
    records.receipts.length !== header.receipts
  ) {
    throw fail("record counts differ from the header");
  }
  return { header, records, hash: framed.hash };
}
