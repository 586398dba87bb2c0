/** A shard's frontier as the node sees it: through which ts it is complete, and its newest data commit. */
export interface ShardFrontier {
  readonly shard: number;
  /** ShardEngine.closedTs: through which ts this node knows the shard's log complete. */
  readonly frontierTs: number;
  /** ShardEngine.lastDataTs: the maxTs of the last data segment applied here (0 before any). */
  readonly lastDataTs: number;
}

/**
 * What holds this node's reads back (DESIGN.md §5): the shard with the lowest frontier
 * pins the common frontier, and the newest data commit this node knows of waits for it
 * `heldBackUs` (0 when none waits: fences and ticks above the pin hold nothing back).
 * Health, the metrics and the frontier watch all judge a stall by this one measure.
 * Null for no shards.
 */
export function frontierHeldBack<T extends ShardFrontier>(shards: readonly T[]): { readonly pin: T; readonly newestCommitTs: number; readonly heldBackUs: number } | null {
  if (shards.length === 0) return null;
  const pin = shards.reduce((lowest, shard) => (shard.frontierTs < lowest.frontierTs ? shard : lowest));
  const newestCommitTs = Math.max(...shards.map((shard) => shard.lastDataTs));
  return { pin, newestCommitTs, heldBackUs: Math.max(0, newestCommitTs - pin.frontierTs) };
}
