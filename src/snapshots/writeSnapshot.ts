import { createHash } from "node:crypto";
import PQueue from "p-queue";
import { CairnError, LOCAL_DUMP_CHUNK_BYTES_MAX, yieldToEventLoop } from "../base/index.js";
import type { DumpChunk, LocalMeta } from "../local/index.js";
import { bucketLayout, type SnapshotPointer } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { ByteWriter, writeIndexUpdate, writeReceipt, writeRevision } from "../segments/index.js";
import { encodeSnapshotPart, encodeSnapshotPartOffThread } from "./SnapshotPart.js";
import { recordSnapshot } from "./SnapshotRecords.js";

/**
 * Streams a point-in-time dump of the local state into create-only parts under a fresh
 * attempt prefix, records it (SnapshotRecords) once every part is there, and returns the
 * pointer to put in the manifest. Nothing here touches the manifest: a snapshot is the
 * shard's current one only once the owner CASes the pointer in, so a crash midway leaves
 * only strays that GC sweeps (a finished attempt that never became current is kept by
 * retention like any other recorded snapshot: its state is a prefix of the log).
 *
 * Memory stays bounded: at most `uploadConcurrency` encoded parts wait for upload while
 * the next part is being filled.
 */
/**
 * Rows already in the record encoding, `count` of them, all of one kind: copied into a
 * part as they are (a restore passes on an older snapshot's rows this way).
 */
export interface EncodedRows {
  readonly kind: DumpChunk["kind"];
  readonly encoded: Uint8Array;
  readonly count: number;
}

export type SnapshotChunk = DumpChunk | EncodedRows;

/**
 * The rows a snapshot is written from, in dump order (DumpCursor): a local store's dump,
 * or rows that arrive asynchronously, some still encoded (a restore's merge of a
 * snapshot and a log).
 */
export interface SnapshotSource {
  /** The state the rows are (the snapshot's seqno, ts, epoch and hash). */
  readonly meta: LocalMeta;
  /** The next chunk, or null at the end. */
  next(): SnapshotChunk | null | Promise<SnapshotChunk | null>;
  /** Releases what the source holds; idempotent. */
  close(): void;
}

export interface WriteSnapshotOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  readonly cursor: SnapshotSource;
  /** Unique per attempt (e.g. epoch and a random suffix). */
  readonly attemptId: string;
  /** Uncompressed bytes per part before it is cut. */
  readonly partBytesTarget?: number;
  readonly uploadConcurrency?: number;
  readonly onProgress?: (progress: SnapshotProgress) => void;
  /**
   * Deflate parts on libuv's thread pool, overlapping the next part's rows (restores and
   * exports); default false: the engine's snapshots stay on its thread (the simulation
   * runs them in virtual time).
   */
  readonly offThread?: boolean;
}

export interface SnapshotProgress {
  readonly phase: "snapshot";
  readonly shard: number;
  readonly seqno: number;
  readonly documents: number;
  readonly parts: number;
  readonly bytes: number;
}

/** 8 MiB parts: few enough PUTs for large shards, small enough to upload in parallel. */
export const SNAPSHOT_PART_BYTES_TARGET = 8 * 1024 * 1024;
/** Parts uploading at once; bounds memory to roughly this many parts. */
export const SNAPSHOT_UPLOAD_CONCURRENCY = 4;

export async function writeSnapshot(options: WriteSnapshotOptions): Promise<SnapshotPointer> {
  const { store, cursor, shard, deploymentId } = options;
  const meta = cursor.meta;
  if (meta.appliedSeqno < 0) throw new CairnError("INTERNAL", `shard ${shard} has nothing to snapshot`);
  const seqno = meta.appliedSeqno;
  const prefix = bucketLayout.snapshotPrefix(shard, seqno, options.attemptId);
  const partBytesTarget = options.partBytesTarget ?? SNAPSHOT_PART_BYTES_TARGET;
  const uploadConcurrency = options.uploadConcurrency ?? SNAPSHOT_UPLOAD_CONCURRENCY;
  const uploads = new PQueue({ concurrency: uploadConcurrency });
  // Each part's hash, in part order (a promise while its deflate runs off the thread).
  const partHashes: Promise<string>[] = [];
  const totals = { documents: 0, bytes: 0 };
  // A part is cut past the target by up to one dump chunk. A restore or export (large by
  // nature) starts with room for that, sparing the copies of growing to it (untouched
  // pages cost no memory); an engine's snapshot, most often of a small shard, grows.
  const writerBytes = options.offThread === true ? partBytesTarget + LOCAL_DUMP_CHUNK_BYTES_MAX * 2 : Math.min(1 << 20, partBytesTarget);
  let writer = new ByteWriter(writerBytes);
  let counts = { documents: 0, indexEntries: 0, receipts: 0 };
  let uploadError: unknown = null;

  const cutPart = async () => {
    const part = partHashes.length;
    const header = { deploymentId, shard, seqno, part, ...counts };
    const payload = writer.finish();
    // Off the thread, the deflate runs while the next part's rows are read; in the
    // upload queue's slot, so at most uploadConcurrency parts are in memory either way.
    const encoding = options.offThread === true ? encodeSnapshotPartOffThread(header, payload) : Promise.resolve(encodeSnapshotPart(header, payload));
    const hash = encoding.then((encoded) => encoded.hash);
    // A failed deflate is reported through the upload below; this copy must not go unhandled.
    hash.catch(() => undefined);
    partHashes.push(hash);
    totals.documents += counts.documents;
    writer = new ByteWriter(writerBytes);
    counts = { documents: 0, indexEntries: 0, receipts: 0 };
    uploads
      .add(async () => {
        const encoded = await encoding;
        totals.bytes += encoded.bytes.byteLength;
        await store.create(bucketLayout.snapshotPart(prefix, part), encoded.bytes);
      })
      .catch((error: unknown) => {
        uploadError ??= error;
      });
    options.onProgress?.({ phase: "snapshot", shard, seqno, parts: partHashes.length, ...totals });
    await uploads.onSizeLessThan(uploadConcurrency);
  };

  try {
    for (let chunk = await cursor.next(); chunk !== null; chunk = await cursor.next()) {
      appendChunk(writer, chunk, counts);
      if (writer.byteLength >= partBytesTarget) await cutPart();
      if (uploadError !== null) throw uploadError;
      // A chunk is a few ms of work: let commits and reads run between chunks, so a
      // snapshot of millions of rows never holds the event loop for seconds.
      await yieldToEventLoop();
    }
    if (partHashes.length === 0 || writer.byteLength > 0) await cutPart();
    await uploads.onIdle();
    if (uploadError !== null) throw uploadError;
  } finally {
    cursor.close();
  }
  const pointer: SnapshotPointer = {
    seqno,
    ts: meta.frontierTs,
    epoch: meta.epoch,
    hash: meta.lastHash,
    key: prefix,
    parts: partHashes.length,
    bytes: totals.bytes,
    sha256: combinePartHashes(await Promise.all(partHashes)),
    documents: totals.documents,
  };
  // Last: a record says every part is there.
  await recordSnapshot(store, shard, pointer);
  return pointer;
}

function appendChunk(
  writer: ByteWriter,
  chunk: SnapshotChunk,
  counts: { documents: number; indexEntries: number; receipts: number },
): void {
  if ("encoded" in chunk) {
    writer.raw(chunk.encoded);
    counts[chunk.kind] += chunk.count;
    return;
  }
  switch (chunk.kind) {
    case "documents":
      for (const row of chunk.rows) writeRevision(writer, row);
      counts.documents += chunk.rows.length;
      return;
    case "indexEntries":
      for (const row of chunk.rows) writeIndexUpdate(writer, row);
      counts.indexEntries += chunk.rows.length;
      return;
    case "receipts":
      for (const row of chunk.rows) writeReceipt(writer, row);
      counts.receipts += chunk.rows.length;
      return;
  }
}

/** The snapshot's identity: sha256 over the parts' hashes in order. */
export function combinePartHashes(partHashes: readonly string[]): string {
  const hash = createHash("sha256");
  for (const partHash of partHashes) hash.update(partHash, "hex");
  return hash.digest("hex");
}
