import { createHash } from "node:crypto";
import { CairnError, SHARDS_MAX } from "../base/index.js";

/**
 * Which shard a shard-key value belongs to (DESIGN.md §10). The definition is part of the
 * data format — every stored document's lane depends on it — so it never changes:
 *
 *   key        = the value encoded as a one-field index key, encodeIndexKey([value])
 *   route      = the first 8 bytes of SHA-256(key), an unsigned 64-bit big-endian integer
 *   shardFor   = jumpConsistentHash(route, numShards)   (Lamping & Veach, 2014)
 *
 * SHA-256 spreads any key evenly, so lanes fill evenly whatever the keys look like; jump
 * hashing then needs no table and, when the shard count grows from N to N+1, moves only
 * the ~1/(N+1) of the routes that go to the new shard (a reshard still rewrites every
 * lane, but fewer documents change lanes).
 *
 * A document of a sharded table carries its route as the first 8 of its id's 16 random
 * bytes (DocumentId), so the lane of an id is known without reading the document.
 */
export const ROUTE_BYTES = 8;

/** The 8-byte route of an encoded shard-key value. */
export function routeOfKey(encodedKey: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(encodedKey).digest().subarray(0, ROUTE_BYTES));
}

/** The shard of an encoded shard-key value among `numShards`. */
export function shardFor(encodedKey: Uint8Array, numShards: number): number {
  return shardOfRoute(routeOfKey(encodedKey), numShards);
}

/** The shard of an 8-byte route among `numShards`. */
export function shardOfRoute(route: Uint8Array, numShards: number): number {
  if (!Number.isSafeInteger(numShards) || numShards < 1 || numShards > SHARDS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `shard count must be an integer in 1..${SHARDS_MAX}, got ${String(numShards)}`);
  }
  if (route.byteLength !== ROUTE_BYTES) throw new CairnError("INTERNAL", `a route has ${ROUTE_BYTES} bytes, not ${route.byteLength}`);
  let key = 0n;
  for (const byte of route) key = (key << 8n) | BigInt(byte);
  return jumpConsistentHash(key, numShards);
}

const MASK_64 = (1n << 64n) - 1n;
const LCG_MULTIPLIER = 2862933555777941757n;

/**
 * Lamping & Veach's jump consistent hash of a 64-bit key into [0, buckets): the same
 * linear congruential steps and the same double arithmetic as their reference code.
 */
function jumpConsistentHash(key: bigint, buckets: number): number {
  let bucket = -1;
  let next = 0;
  while (next < buckets) {
    bucket = next;
    key = (key * LCG_MULTIPLIER + 1n) & MASK_64;
    next = Math.floor((bucket + 1) * (2 ** 31 / (Number(key >> 33n) + 1)));
  }
  return bucket;
}
