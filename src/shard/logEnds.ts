import type { Random } from "../base/index.js";
import { CasObject, bucketLayout, manifestCodec, type Manifest } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { readLog } from "../segments/index.js";

/** Where one shard's log ends now, as a reader of the past needs it. */
export interface LogEnd {
  readonly shard: number;
  /** The maxTs of its last segment (or of its snapshot, with no segment after it); 0 for a shard never written. */
  readonly lastTs: number;
  /** Whether its writer handed it back (stopped gracefully): nothing more comes until a next writer acquires. */
  readonly handedBack: boolean;
}

/**
 * Reads where every shard's log ends: its manifest, then the segments from its tail hint
 * to the first empty slot (a few GETs: the hint is near the end).
 */
export async function readLogEnds(store: ObjectStore, deploymentId: string, numShards: number, random: Random): Promise<LogEnd[]> {
  const ends: LogEnd[] = [];
  for (let shard = 0; shard < numShards; shard++) {
    const manifest = (await new CasObject<Manifest>(store, bucketLayout.manifest(shard), manifestCodec, random).read())?.value ?? null;
    if (manifest === null) {
      ends.push({ shard, lastTs: 0, handedBack: true });
      continue;
    }
    let lastTs = manifest.snapshot?.ts ?? 0;
    const from = Math.max(manifest.logStart, manifest.tailHint, manifest.snapshot === null ? 0 : manifest.snapshot.seqno + 1);
    for await (const segment of readLog(store, { deploymentId, inheritedFrom: manifest.inheritedFrom, shard, fromSeqno: from, concurrency: 4 })) lastTs = Math.max(lastTs, segment.header.maxTs);
    ends.push({ shard, lastTs, handedBack: manifest.writer === null });
  }
  return ends;
}
