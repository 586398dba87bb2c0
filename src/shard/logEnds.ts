import type { Clock, Random } from "../base/index.js";
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

/**
 * The newest ts every shard's log has closed: the least of the live writers' last
 * segments' maxTs (settled: those logs have passed it). A shard whose writer handed it
 * back is closed for good, up to the next writer, whose stamps may lag this clock by the
 * skew nodes tolerate: without live writers it is the newest commit, once the clock is
 * that skew past it (a wait of at most a second).
 */
const NEXT_WRITER_CLOCK_SKEW_MS = 1_000;

export async function commonFrontierTs(store: ObjectStore, deploymentId: string, numShards: number, random: Random, clock: Clock): Promise<number> {
  const ends = await readLogEnds(store, deploymentId, numShards, random);
  const live = ends.filter((end) => !end.handedBack);
  const atTs = live.length > 0 ? Math.min(...live.map((end) => end.lastTs)) : Math.max(0, ...ends.map((end) => end.lastTs));
  if (live.length < ends.length) {
    const waitMs = Math.ceil(atTs / 1000) + NEXT_WRITER_CLOCK_SKEW_MS - clock.nowMs();
    if (waitMs > 0) await clock.sleep(waitMs);
  }
  return atTs;
}
