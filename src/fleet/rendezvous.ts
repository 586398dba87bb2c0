import { createHash } from "node:crypto";
import { CairnError, SHARDS_MAX } from "../base/index.js";
import { isNodeId, NODE_ID_FORM } from "../model/index.js";

/**
 * Which live node should own a shard: rendezvous (highest-random-weight) hashing
 * (Thaler & Ravishankar, 1996; DESIGN.md §9 "Fleet"). Every node computes the same owner
 * from the same live set, with no table and no coordinator: the bucket's `nodes/` is all
 * the nodes share.
 *
 * The weight is part of the fleet's protocol — nodes of different versions must agree on
 * every owner — so its definition never changes (a new one would be "v2" in the prefix
 * and a fleet-wide switch):
 *
 *   input   = UTF-8 "cairn-rendezvous-v1" ‖ 0x00 ‖ shard as uint32 big-endian ‖ nodeId UTF-8
 *   weight  = the first 8 bytes of SHA-256(input), an unsigned 64-bit big-endian integer
 *   owner   = the live node with the highest weight; equal weights go to the nodeId that
 *             sorts first (UTF-16 code units, which for node ids — ASCII, NODE_ID_PATTERN —
 *             is byte order), so the owner is a total function of the live *set*
 *
 * Why SHA-256: rendezvous hashing needs a weight whose every bit is independent of the
 * input's, because consecutive shard numbers and node ids that differ in one trailing
 * character (node-1, node-2) are the normal case. FNV-1a carries its last input byte into
 * the high bits through one multiplication only, a weak avalanche that gives such inputs
 * correlated weights and skewed owners; xxhash would do but is not in Node. SHA-256 is
 * in node:crypto, computes the same bytes on every platform and Node version, and is what
 * shardFor already uses (model/shardFor.ts). It costs ~2 µs a weight on this machine:
 * 256 shards × 10 nodes is ~6 ms, paid only when the live set changes (OwnershipPlanner
 * keeps the assignment of the live set it last saw). The fixed-width shard before the
 * variable-length node id keeps the encoding unambiguous; the versioned prefix keeps
 * these weights apart from any other SHA-256 use.
 *
 * Invariants:
 * - The owner depends only on the shard and the set of live node ids: not on the order
 *   of the list, nor on duplicates in it.
 * - Adding a node to the live set moves only shards *to* that node (each shard whose new
 *   weight beats its old owner's), about numShards / (N + 1) of them; removing a node
 *   moves only the shards it owned. No other shard changes owner.
 * - Bad input (a shard outside 0..SHARDS_MAX-1, a malformed node id) is INVALID_ARGUMENT.
 */

const WEIGHT_PREFIX = new TextEncoder().encode("cairn-rendezvous-v1\0");
const SHARD_BYTES = 4;

/** The rendezvous weight of `nodeId` for `shard`: an unsigned 64-bit integer. */
export function rendezvousWeight(shard: number, nodeId: string): bigint {
  checkShard(shard);
  checkNodeId(nodeId);
  return weightOf(shard, nodeId);
}

/** The live node that should own `shard`, or null when no node is live. */
export function ownerOf(shard: number, liveNodeIds: readonly string[]): string | null {
  checkShard(shard);
  liveNodeIds.forEach(checkNodeId);
  return ownerAmong(shard, liveNodeIds);
}

/**
 * Every live node ranked for `shard`, the owner first: highest weight first, equal
 * weights by nodeId. The ranking says who comes next when the owner cannot take a shard.
 */
export function rendezvousRanking(shard: number, liveNodeIds: readonly string[]): string[] {
  checkShard(shard);
  liveNodeIds.forEach(checkNodeId);
  const weighted = [...new Set(liveNodeIds)].map((nodeId) => ({ nodeId, weight: weightOf(shard, nodeId) }));
  weighted.sort((a, b) => (a.weight === b.weight ? compareNodeIds(a.nodeId, b.nodeId) : a.weight > b.weight ? -1 : 1));
  return weighted.map((entry) => entry.nodeId);
}

/** The owner of each of `numShards` shards (index = shard); all null when no node is live. */
export function assignment(numShards: number, liveNodeIds: readonly string[]): (string | null)[] {
  if (!Number.isSafeInteger(numShards) || numShards < 1 || numShards > SHARDS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `shard count must be an integer in 1..${SHARDS_MAX}, got ${String(numShards)}`);
  }
  liveNodeIds.forEach(checkNodeId);
  const owners: (string | null)[] = [];
  for (let shard = 0; shard < numShards; shard++) owners.push(ownerAmong(shard, liveNodeIds));
  return owners;
}

function ownerAmong(shard: number, liveNodeIds: readonly string[]): string | null {
  let owner: string | null = null;
  let ownerWeight = -1n;
  for (const nodeId of liveNodeIds) {
    const weight = weightOf(shard, nodeId);
    if (weight > ownerWeight || (weight === ownerWeight && owner !== null && compareNodeIds(nodeId, owner) < 0)) {
      owner = nodeId;
      ownerWeight = weight;
    }
  }
  return owner;
}

function weightOf(shard: number, nodeId: string): bigint {
  const nodeIdBytes = Buffer.from(nodeId, "utf8");
  const input = Buffer.allocUnsafe(WEIGHT_PREFIX.byteLength + SHARD_BYTES + nodeIdBytes.byteLength);
  input.set(WEIGHT_PREFIX, 0);
  input.writeUInt32BE(shard, WEIGHT_PREFIX.byteLength);
  input.set(nodeIdBytes, WEIGHT_PREFIX.byteLength + SHARD_BYTES);
  return createHash("sha256").update(input).digest().readBigUInt64BE(0); // its first 8 bytes
}

function compareNodeIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function checkShard(shard: number): void {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard >= SHARDS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `a shard must be an integer in 0..${SHARDS_MAX - 1}, got ${String(shard)}`);
  }
}

function checkNodeId(nodeId: string): void {
  if (!isNodeId(nodeId)) throw new CairnError("INVALID_ARGUMENT", `a node id must be ${NODE_ID_FORM}, got ${JSON.stringify(nodeId)}`);
}
