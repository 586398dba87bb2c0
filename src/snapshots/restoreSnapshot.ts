import { createHash } from "node:crypto";
import { CairnError, prefetchInOrder } from "../base/index.js";
import type { DumpChunk, LocalStore, RestoreStats } from "../local/index.js";
import { bucketLayout, type SnapshotPointer } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { decodeSnapshotPart, decodeSnapshotPayloadOffThread, type DecodedSnapshotPart, type EncodedSnapshotPayload, type ExpectedPart } from "./SnapshotPart.js";

/**
 * Replaces the local state with a snapshot: parts are fetched ahead with bounded
 * concurrency, each verified (checksum, header, counts), and streamed into one local
 * restore transaction. The combined hash is checked before the last chunk is handed
 * over, so a snapshot that fails verification leaves the old local state in place.
 */
export interface RestoreSnapshotOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  /** Deployments whose parts this shard may read too (Manifest.inheritedFrom). */
  readonly inheritedFrom?: readonly string[];
  readonly shard: number;
  readonly pointer: SnapshotPointer;
  readonly local: LocalStore;
  readonly fetchConcurrency?: number;
  readonly onProgress?: (progress: RestoreProgress) => void;
}

export interface RestoreProgress {
  readonly phase: "restore";
  readonly shard: number;
  readonly seqno: number;
  readonly partsDone: number;
  readonly parts: number;
  readonly documents: number;
  readonly documentsTotal: number;
}

/** Parts fetched ahead of the SQLite writer; each holds at most ~8 MiB decoded. */
export const SNAPSHOT_FETCH_CONCURRENCY = 4;

export async function restoreSnapshot(options: RestoreSnapshotOptions): Promise<RestoreStats> {
  const { pointer, local } = options;
  return local.restore(
    snapshotChunks(options),
    { appliedSeqno: pointer.seqno, epoch: pointer.epoch, lastHash: pointer.hash, frontierTs: pointer.ts },
    // Each part is verified by its checksum and the whole by the combined hash, and the
    // rows are a dump of a store that checked every one of them when it was applied: the
    // ids and keys need no second parse (most of a restore's cost otherwise).
    { recordsChecked: true },
  );
}

async function* snapshotChunks(options: RestoreSnapshotOptions): AsyncGenerator<DumpChunk> {
  const { pointer, shard } = options;
  let documents = 0;
  for await (const part of readSnapshotParts(options)) {
    const { revisions, indexUpdates, receipts } = part.records;
    if (revisions.length > 0) yield { kind: "documents", rows: revisions };
    if (indexUpdates.length > 0) yield { kind: "indexEntries", rows: indexUpdates };
    if (receipts.length > 0) yield { kind: "receipts", rows: receipts };
    documents += revisions.length;
    options.onProgress?.({
      phase: "restore",
      shard,
      seqno: pointer.seqno,
      partsDone: part.header.part + 1,
      parts: pointer.parts,
      documents,
      documentsTotal: pointer.documents,
    });
  }
}

export interface ReadSnapshotOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  /** Deployments whose parts this shard may read too (Manifest.inheritedFrom). */
  readonly inheritedFrom?: readonly string[];
  readonly shard: number;
  readonly pointer: SnapshotPointer;
  readonly fetchConcurrency?: number;
}

/**
 * The snapshot's parts in order, each verified (checksum, header, counts), fetched ahead
 * with bounded concurrency. The combined hash is checked before the last part is yielded,
 * so a consumer that stops at an error has never seen the whole of a snapshot that fails
 * it. SNAPSHOT_MISSING for a part that is gone, SNAPSHOT_INVALID for one that fails.
 */
export function readSnapshotParts(options: ReadSnapshotOptions): AsyncGenerator<DecodedSnapshotPart> {
  return readVerifiedParts(options, decodeSnapshotPart);
}

/**
 * `readSnapshotParts` with the records left encoded (inflated off the thread): the
 * consumer scans them and checks their counts against each header (MergedDump).
 */
export function readSnapshotPayloads(options: ReadSnapshotOptions): AsyncGenerator<EncodedSnapshotPayload> {
  return readVerifiedParts(options, decodeSnapshotPayloadOffThread);
}

async function* readVerifiedParts<Part extends { readonly hash: string }>(
  options: ReadSnapshotOptions,
  decode: (bytes: Uint8Array, expected: ExpectedPart) => Part | Promise<Part>,
): AsyncGenerator<Part> {
  const { store, pointer, shard, deploymentId } = options;
  const combined = createHash("sha256");
  const parts = prefetchInOrder(
    pointer.parts,
    async (part) => {
      const key = bucketLayout.snapshotPart(pointer.key, part);
      const result = await store.get(key);
      if (result === null) {
        throw new CairnError("SNAPSHOT_MISSING", `snapshot part ${key} is gone (superseded and collected?)`, {
          details: { shard, seqno: pointer.seqno, key },
        });
      }
      if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
      return decode(result.body, { deploymentId, shard, seqno: pointer.seqno, part, inheritedFrom: options.inheritedFrom ?? [] });
    },
    options.fetchConcurrency ?? SNAPSHOT_FETCH_CONCURRENCY,
  );
  let partsDone = 0;
  for await (const part of parts) {
    combined.update(part.hash, "hex");
    partsDone++;
    if (partsDone === pointer.parts && combined.digest("hex") !== pointer.sha256) {
      throw new CairnError("SNAPSHOT_INVALID", `snapshot ${pointer.seqno} of shard ${shard} fails its combined hash`, {
        details: { shard, seqno: pointer.seqno },
      });
    }
    yield part;
  }
}
