import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { assignment } from "../../src/fleet/index.js";
import type { EndpointAddress } from "../kit/RemoteEndpoint.js";
import { ServeChild } from "../kit/ServeChild.js";

/** Output lines a node keeps for a failure report and the kill phase's search (the rest is dropped as it comes). */
const OUTPUT_LINES_KEPT = 200;
/** How long a stopping node may drain and hand its leases over before it is killed. */
const STOP_WAIT_MS_MAX = 30_000;
/** How long one health or status read may take (a node under load may answer late; its lateness is measured). */
const HTTP_WAIT_MS_MAX = 60_000;

/** A fleet node: `cairn serve --fleet`, its ServeChild named by its node id. */
export type FleetNode = ServeChild;

export interface FleetNodeOptions {
  readonly nodeId: string;
  readonly endpoint: EndpointAddress;
  /** The deployment's key prefix in the endpoint's bucket. */
  readonly prefix: string;
  readonly localDirectory: string;
  readonly appPath: string;
  readonly numShards: number;
  /** Node's own flags (e.g. --cpu-prof). */
  readonly nodeFlags?: readonly string[];
}

/** `cairn serve --fleet` as an operator runs it, with the fleet's default tuning; its CPU is read from /proc (procCpu.ts). */
export function startFleetNode(options: FleetNodeOptions): Promise<FleetNode> {
  return ServeChild.start({
    name: options.nodeId,
    endpoint: options.endpoint,
    prefix: options.prefix,
    localDirectory: options.localDirectory,
    appPath: options.appPath,
    serveFlags: ["--fleet", "--node-id", options.nodeId, "--shards", String(options.numShards)],
    ...(options.nodeFlags !== undefined ? { nodeFlags: options.nodeFlags } : {}),
    outputLinesMax: OUTPUT_LINES_KEPT,
    stopWaitMsMax: STOP_WAIT_MS_MAX,
    httpWaitMsMax: HTTP_WAIT_MS_MAX,
  });
}

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
  const liveIds = nodes.map((node) => node.name).sort();
  const views = await Promise.all(nodes.map((node) => node.health()));
  return views.every(
    (view, index) =>
      JSON.stringify(view.fleet?.liveNodes ?? []) === JSON.stringify(liveIds) &&
      view.shards.every((shard) => shard.writer === expected[shard.shard] && (shard.state === "writing") === (expected[shard.shard] === nodes[index]!.name)),
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
