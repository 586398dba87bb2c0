import { systemClock, systemRandom } from "../base/index.js";
import { bucketLayout, parseSegmentSeqno, openGlobals, generationStore, ShardManifest } from "../manifest/index.js";
import { openObjectStore } from "../objectstore/index.js";

/** Prints what the bucket holds, read-only: globals, manifests, log extents. */
export async function inspectCommand(options: { readonly store: string }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const globals = await openGlobals(store, { clock: systemClock, random: systemRandom, mustExist: true });
    const { deploymentId, numShards, createdAt, generation, retired } = globals.value;
    const shardStore = generationStore(store, generation);
    const retiredNote = retired.length === 0 ? "" : `; retired generation(s) not yet deleted: ${retired.map((old) => old.generation).join(", ")}`;
    const lines = [
      `deployment ${deploymentId}: ${numShards} shard(s), layout generation ${generation}, created ${new Date(createdAt).toISOString()}${retiredNote}`,
    ];
    for (let shard = 0; shard < numShards; shard++) {
      const manifest = new ShardManifest(shardStore, shard, deploymentId, systemRandom);
      const current = await manifest.refresh();
      let first: number | null = null;
      let last: number | null = null;
      let segments = 0;
      for await (const entry of shardStore.list(bucketLayout.logPrefix(shard))) {
        const seqno = parseSegmentSeqno(shard, entry.key);
        if (seqno === null) continue;
        first ??= seqno;
        last = seqno;
        segments++;
      }
      const writer = current.writer
        ? `${current.writer.nodeId} until ${new Date(current.leaseExpiresAt).toISOString()}`
        : "none";
      const snapshot = current.snapshot
        ? `seqno ${current.snapshot.seqno} (${current.snapshot.documents} documents, ${current.snapshot.bytes} bytes)`
        : "none";
      lines.push(
        `shard ${shard}: epoch ${current.epoch}, writer ${writer}, logStart ${current.logStart}, ` +
          `segments ${segments === 0 ? "none" : `${first}..${last} (${segments})`}, snapshot ${snapshot}`,
      );
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await store.close();
  }
}
