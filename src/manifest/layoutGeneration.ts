import { PrefixedObjectStore, type ObjectStore } from "../objectstore/index.js";

/**
 * Layout generations (DESIGN.md §10). A reshard never rewrites shards in place: it writes
 * the new shard count's manifests, logs and snapshots beside the old ones, under a new
 * generation, and then switches `globals` to it. Generation 0 is the original layout,
 * `s{shard}/…` at the root; generation g > 0 lives under `g{g}/`, with the same keys
 * below (bucketLayout). `globals`, the schema catalog and the node registry stay at the
 * root, shared by every generation.
 */
export function generationPrefix(generation: number): string {
  return generation === 0 ? "" : `g${generation}/`;
}

/** The store the shards of `generation` read and write (bucketLayout keys relative to it). */
export function generationStore(store: ObjectStore, generation: number): ObjectStore {
  return generation === 0 ? store : new PrefixedObjectStore(store, generationPrefix(generation));
}

/**
 * The key prefixes that hold everything of `generation` with `numShards` shards, for
 * deleting it: one per shard in generation 0 (whose shards share the root with globals),
 * the generation's own prefix otherwise.
 */
export function generationKeyPrefixes(generation: number, numShards: number): string[] {
  if (generation !== 0) return [generationPrefix(generation)];
  return Array.from({ length: numShards }, (_, shard) => `s${shard}/`);
}
