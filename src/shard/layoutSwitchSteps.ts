import { CairnError, type Clock, type Random } from "../base/index.js";
import { dropRetiredGeneration, heldGenerations, isLeaseLive, readBranchRegistry, ShardManifest, type Globals, type HeldReshardLock } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * Steps every layout switch shares (a reshard, an in-place restore): the checks before
 * the reshard lock is taken, its renewal while the new generation is written, and the
 * deletion of retired generations after the switch.
 */

/** LEASE_HELD when any shard of the old layout has a live writer (checked before anything is written). */
export async function refuseLiveLeases(store: ObjectStore, globals: Globals, nowMs: number, random: Random, doing = "resharding"): Promise<void> {
  for (let shard = 0; shard < globals.numShards; shard++) {
    const manifest = await new ShardManifest(store, shard, globals.deploymentId, random).refresh().catch((error: unknown) => {
      if ((error as { code?: string }).code === "MANIFEST_INVALID") return null;
      throw error;
    });
    if (manifest === null || !isLeaseLive(manifest, nowMs)) continue;
    throw new CairnError(
      "LEASE_HELD",
      `shard ${shard} has a live writer (${manifest.writer!.nodeId}, lease until ${new Date(manifest.leaseExpiresAt).toISOString()}); ` +
        `stop every node of the deployment before ${doing}; nothing was changed`,
      { details: { shard, nodeId: manifest.writer!.nodeId, leaseExpiresAt: manifest.leaseExpiresAt } },
    );
  }
}

/**
 * Deletes every generation globals lists as retired, then drops it from the list; one
 * kept until a later time (an in-place restore's previous layout) is left until then,
 * and so is one a live branch holds (BranchRegistry).
 */
export async function deleteRetired(
  store: ObjectStore,
  random: Random,
  globals: Globals,
  nowMs: number,
  deleteGeneration: (generation: number, numShards: number) => Promise<void>,
): Promise<void> {
  const due = globals.retired.filter((old) => old.generation !== globals.generation && (old.keepUntil === undefined || nowMs >= old.keepUntil));
  if (due.length === 0) return;
  // Read after the switch: a branch of a generation registers before it checks that generation is still current (createBranch).
  const held = heldGenerations((await readBranchRegistry(store, random)).registrations.map((read) => read.value), nowMs);
  for (const old of due) {
    // Live branches read from it: kept (in the list) until they expire or are deleted.
    if (held.has(old.generation)) continue;
    await deleteGeneration(old.generation, old.numShards);
    await dropRetiredGeneration(store, random, old.generation);
  }
}

const DELETE_BATCH_KEYS = 1000;

/** Deletes every key under `prefixes` (that `doomed` accepts), a LIST page at a time; returns how many went. */
export async function deletePrefixes(
  store: ObjectStore,
  prefixes: readonly string[],
  onProgress: (deleted: number) => void,
  doomed: (key: string) => boolean = () => true,
): Promise<number> {
  let deleted = 0;
  for (const prefix of prefixes) {
    let batch: string[] = [];
    for await (const entry of store.list(prefix)) {
      if (!doomed(entry.key)) continue;
      batch.push(entry.key);
      if (batch.length >= DELETE_BATCH_KEYS) {
        await store.deleteMany(batch);
        deleted += batch.length;
        batch = [];
        onProgress(deleted);
      }
    }
    if (batch.length > 0) {
      await store.deleteMany(batch);
      deleted += batch.length;
      onProgress(deleted);
    }
  }
  return deleted;
}

/** Renews the lock every third of its TTL; `check` throws once a renewal failed. */
export function keepRenewed(lock: HeldReshardLock, clock: Clock, ttlMs: number) {
  const controller = new AbortController();
  let failure: unknown = null;
  const loop = (async () => {
    while (!controller.signal.aborted) {
      try {
        await clock.sleep(Math.floor(ttlMs / 3), controller.signal);
      } catch {
        return;
      }
      try {
        await lock.renew(clock.nowMs(), ttlMs);
      } catch (error) {
        failure = error;
        return;
      }
    }
  })();
  return {
    check(): void {
      if (failure !== null) throw failure;
    },
    /** Ends the renewals (whatever the last one did: `check` reports a failure). */
    async stop(): Promise<void> {
      controller.abort();
      await loop;
    },
  };
}
