import { systemClock, systemRandom } from "../base/index.js";
import { liveNodes } from "../fleet/index.js";
import { bucketLayout, parseSegmentSeqno, openGlobals, generationStore, ShardManifest } from "../manifest/index.js";
import { openObjectStore } from "../objectstore/index.js";
import { readSegment } from "../segments/index.js";
import { formatDuration, formatTs } from "./pointInTime.js";

/**
 * Prints what the bucket holds, read-only: globals, the live nodes (their role, URL and
 * the shards they say they write), each shard's manifest (writer, epoch, lease) and log
 * extent with its frontier (the maxTs of its last segment), and the common frontier a
 * node reads at, with the shard that pins it.
 */
export async function inspectCommand(options: { readonly store: string }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const globals = await openGlobals(store, { clock: systemClock, random: systemRandom, mustExist: true });
    const { deploymentId, numShards, createdAt, generation, retired, retentionMs } = globals.value;
    const shardStore = generationStore(store, generation);
    const retiredNote =
      retired.length === 0
        ? ""
        : `; retired generation(s) not yet deleted: ${retired
            .map((old) => (old.keepUntil === undefined ? String(old.generation) : `${old.generation} (kept until ${new Date(old.keepUntil).toISOString()})`))
            .join(", ")}`;
    const lines = [
      `deployment ${deploymentId}: ${numShards} shard(s), layout generation ${generation}, created ${new Date(createdAt).toISOString()}, ` +
        `retention ${formatDuration(retentionMs)}${retiredNote}`,
    ];
    const { branch } = globals.value;
    if (branch !== null) {
      lines.push(`a branch ("${branch.id}") of deployment ${branch.parentDeploymentId} at ${branch.parentUrl}, forked at ${formatTs(branch.forkTs)} (cairn branch renew keeps the parent holding its history)`);
    }
    const nowMs = systemClock.nowMs();
    const nodes = await liveNodes(store, deploymentId, systemRandom, nowMs);
    lines.push(`live nodes: ${nodes.length === 0 ? "none" : nodes.length}`);
    for (const node of nodes.sort((a, b) => a.nodeId.localeCompare(b.nodeId))) {
      const writes = node.writes === undefined ? "" : `, writes ${node.writes.length === 0 ? "no shard" : `shard(s) ${node.writes.join(", ")}`}`;
      lines.push(`  node ${node.nodeId}: ${node.role} at ${node.url ?? "(no URL)"}${writes}, entry live until ${new Date(node.expiresAt).toISOString()}`);
    }
    const frontiers: { shard: number; ts: number | null; writer: string | null }[] = [];
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
      const leaseLive = current.writer !== null && current.leaseExpiresAt > nowMs;
      const writer = current.writer
        ? `${current.writer.nodeId} (lease ${leaseLive ? "live" : "lapsed"} until ${new Date(current.leaseExpiresAt).toISOString()})`
        : "none";
      // The shard's frontier: the maxTs of its last segment (a GET of that one segment).
      const frontierTs = last === null ? null : ((await readSegment(shardStore, { deploymentId, shard, seqno: last, inheritedFrom: current.inheritedFrom }))?.header.maxTs ?? null);
      frontiers.push({ shard, ts: frontierTs, writer: leaseLive ? current.writer!.nodeId : null });
      const snapshot = current.snapshot
        ? `seqno ${current.snapshot.seqno} (${current.snapshot.documents} documents, ${current.snapshot.bytes} bytes)`
        : "none";
      lines.push(
        `shard ${shard}: epoch ${current.epoch}, writer ${writer}, logStart ${current.logStart}, ` +
          `segments ${segments === 0 ? "none" : `${first}..${last} (${segments})`}, frontier ts ${frontierTs ?? "none"}, snapshot ${snapshot}`,
      );
    }
    const known = frontiers.filter((frontier) => frontier.ts !== null);
    if (known.length > 0) {
      const pin = known.reduce((lowest, frontier) => (frontier.ts! < lowest.ts! ? frontier : lowest));
      const highest = Math.max(...known.map((frontier) => frontier.ts!));
      const behindMs = Math.round((highest - pin.ts!) / 1000);
      lines.push(
        `common frontier: ts ${pin.ts} (${new Date(pin.ts! / 1000).toISOString()}), pinned by shard ${pin.shard}` +
          (behindMs > 0 ? `, ${behindMs} ms behind the newest shard; its writer: ${pin.writer ?? "none live (reads wait for a takeover)"}` : ""),
      );
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await store.close();
  }
}
