import { errorKindOf, hasErrorCode, type Random } from "../base/index.js";
import { generationStore, type Globals } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { restorableBase } from "./stateAt.js";

/**
 * The layout whose history holds `atTs`: the current one, or else the layout an earlier
 * in-place restore replaced and still keeps, the earliest one that was current after it
 * (the one that was current then). RESTORE_OUT_OF_RANGE when none does.
 */
export async function generationHolding(store: ObjectStore, globals: Globals, atTs: number, random: Random, nowMs: number): Promise<{ generation: number; numShards: number }> {
  const kept = globals.retired
    .filter((old) => old.keepUntil !== undefined && nowMs < old.keepUntil && old.closedAtTs !== undefined && old.closedAtTs >= atTs)
    .sort((a, b) => a.closedAtTs! - b.closedAtTs!);
  const candidates = [{ generation: globals.generation, numShards: globals.numShards }, ...kept.map(({ generation, numShards }) => ({ generation, numShards }))];
  let refusal: unknown = null;
  for (const candidate of candidates) {
    try {
      for (let shard = 0; shard < candidate.numShards; shard++) {
        await restorableBase({ store: generationStore(store, candidate.generation), deploymentId: globals.deploymentId, shard, atTs, random });
      }
      return candidate;
    } catch (error) {
      if (!hasErrorCode(error, "RESTORE_OUT_OF_RANGE") || errorKindOf(error) !== "InvalidInput") throw error;
      refusal ??= error;
    }
  }
  throw refusal;
}
