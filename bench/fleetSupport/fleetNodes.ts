import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { assignment } from "../../src/fleet/index.js";
import type { FleetNode } from "./FleetNode.js";

/**
 * Node ids for a benchmark fleet: the first `count` of them, for every fleet size asked
 * for, split the shards as evenly as rendezvous hashing can (with few shards its split of
 * arbitrary ids is lumpy — node-1, node-2, node-3 get 4, 2 and 0 of 6 — and an uneven
 * split would measure the split, not the fleet). Chosen greedily from fleet-1, fleet-2, …
 */
export function balancedNodeIds(count: number, numShards: number): string[] {
  const ids: string[] = [];
  for (let size = 1; size <= count; size++) {
    let best: { readonly id: string; readonly spread: number } | null = null;
    for (let index = 1; index <= 200 && (best === null || best.spread > (numShards % size === 0 ? 0 : 1)); index++) {
      const id = `fleet-${index}`;
      if (ids.includes(id)) continue;
      const spread = spreadOf([...ids, id], numShards);
      if (best === null || spread < best.spread) best = { id, spread };
    }
    ids.push(best!.id);
  }
  return ids;
}

/** Most shards one node gets minus fewest, over `ids`. */
export function spreadOf(ids: readonly string[], numShards: number): number {
  const counts = shardsPerNode(ids, numShards);
  return Math.max(...Object.values(counts)) - Math.min(...Object.values(counts));
}

export function shardsPerNode(ids: readonly string[], numShards: number): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const owner of assignment(numShards, ids)) counts[owner!] = (counts[owner!] ?? 0) + 1;
  return counts;
}

/**
 * Whether every node agrees on each shard's writer, that writer is `expected`'s, every
 * node writes exactly the shards it is named for, and every node sees all of them live.
 */
export async function isConverged(nodes: readonly FleetNode[], expected: readonly (string | null)[]): Promise<boolean> {
  const liveIds = nodes.map((node) => node.nodeId).sort();
  const views = await Promise.all(nodes.map((node) => node.health()));
  return views.every(
    (view, index) =>
      JSON.stringify(view.fleet?.liveNodes ?? []) === JSON.stringify(liveIds) &&
      view.shards.every((shard) => shard.writer === expected[shard.shard] && (shard.state === "writing") === (expected[shard.shard] === nodes[index]!.nodeId)),
  );
}

/** Polls until `isConverged`; returns how long it took (ms). */
export async function awaitConverged(nodes: readonly FleetNode[], expected: readonly (string | null)[], waitMsMax: number, startedMs = performance.now()): Promise<number> {
  for (;;) {
    if (await isConverged(nodes, expected).catch(() => false)) return performance.now() - startedMs;
    if (performance.now() - startedMs > waitMsMax) {
      const views = await Promise.all(nodes.map((node) => node.health().catch((error: Error) => error.message)));
      throw new CairnError("TIMEOUT", `the fleet did not converge to ${JSON.stringify(expected)} within ${waitMsMax} ms: ${JSON.stringify(views)}`);
    }
    await sleep(100);
  }
}
