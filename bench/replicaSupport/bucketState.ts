import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { ConsumerWatermarks, type ConsumerWatermark } from "../../src/gc/ConsumerWatermarks.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { CasObject } from "../../src/manifest/CasObject.js";
import { manifestCodec, type Manifest } from "../../src/manifest/Manifest.js";
import type { ObjectStore } from "../../src/objectstore/index.js";

/**
 * Read-only looks at a deployment's shard 0 in the bucket, from the benchmark's own
 * store client (so they are not counted among the nodes' calls): its manifest (logStart,
 * the snapshot pointer), a replica's consumer watermark, which holds the writer's GC
 * back from the segments that replica has yet to apply, and the version of a node's
 * registry entry. Every CAS write raises an object's `version` by one, so the versions'
 * growth over a window counts that object's PUTs exactly.
 */
export interface ShardBucketState {
  readonly logStart: number;
  readonly tailHint: number;
  /** The newest snapshot's seqno, or null before the first. */
  readonly snapshotSeqno: number | null;
}

/** Reads never write, so the CAS objects' nonces are never drawn. */
const UNUSED_RANDOM = new SeededRandom(0);

export async function readShardState(store: ObjectStore): Promise<ShardBucketState> {
  const snapshot = await new CasObject<Manifest>(store, bucketLayout.manifest(0), manifestCodec, UNUSED_RANDOM).read();
  if (snapshot === null) throw new CairnError("INTERNAL", "the deployment has no manifest for shard 0");
  const manifest = snapshot.value;
  return { logStart: manifest.logStart, tailHint: manifest.tailHint, snapshotSeqno: manifest.snapshot?.seqno ?? null };
}

/** The version of `nodes/{nodeId}`, or null when the node has no entry. */
export async function readNodeEntryVersion(store: ObjectStore, nodeId: string): Promise<number | null> {
  const result = await store.get(bucketLayout.node(nodeId));
  if (result === null) return null;
  if (result === "not-modified") throw new CairnError("INTERNAL", "an unconditional GET answered not-modified");
  const version = (JSON.parse(new TextDecoder().decode(result.body)) as { version?: unknown }).version;
  if (typeof version !== "number") throw new CairnError("INTERNAL", `the registry entry of ${nodeId} has no version`);
  return version;
}

export async function readWatermark(store: ObjectStore, consumerId: string): Promise<ConsumerWatermark | null> {
  return new ConsumerWatermarks(store, 0, UNUSED_RANDOM).read(consumerId);
}
