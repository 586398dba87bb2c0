import { CairnError, systemClock, systemRandom, type Clock, type Random } from "../base/index.js";
import { branchRegistrationObject, bucketLayout, generationStore, globalsObject, type BranchRegistration, type Globals } from "../manifest/index.js";
import { InheritingObjectStore, type ObjectStore } from "../objectstore/index.js";
import { deletePrefixes, refuseLiveLeases } from "./layoutSwitchSteps.js";

/**
 * What happens to a branch after `createBranch` (DESIGN.md §10a): its registration in the
 * parent is renewed while it is in use, and deleting it frees its own objects only.
 */
export interface BranchLifecycleOptions {
  /** The branch's root, as openObjectStore opens it (the view with its parent). */
  readonly store: ObjectStore;
  /** Opens the parent's root URL (globals.branch.parentUrl). */
  readonly openStore: (url: string) => Promise<ObjectStore>;
  readonly clock?: Clock;
  readonly random?: Random;
}

/** The branch's registration in its parent, read. */
export async function readBranchRegistration(options: BranchLifecycleOptions): Promise<{ readonly globals: Globals; readonly registration: BranchRegistration | null }> {
  const random = options.random ?? systemRandom;
  const globals = await branchGlobals(options.store, random);
  const parent = await options.openStore(globals.branch!.parentUrl);
  try {
    return { globals, registration: (await branchRegistrationObject(parent, globals.branch!.id, random).read())?.value ?? null };
  } finally {
    await parent.close();
  }
}

/**
 * Moves the registration's expiry to now + its ttl (or `ttlMs`, which becomes its ttl).
 * An expired registration is not renewed: the parent may have collected what it held.
 */
export async function renewBranch(options: BranchLifecycleOptions & { readonly ttlMs?: number }): Promise<BranchRegistration> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const globals = await branchGlobals(options.store, random);
  const own = globals.branch!;
  if (options.ttlMs !== undefined && (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0)) {
    throw new CairnError("INVALID_ARGUMENT", `a branch's ttl must be a positive number of ms, not ${String(options.ttlMs)}`);
  }
  const parent = await options.openStore(own.parentUrl);
  try {
    const renewed = await branchRegistrationObject(parent, own.id, random).update((current) => {
      const nowMs = clock.nowMs();
      if (current === null) {
        throw new CairnError("BRANCH_NOT_FOUND", `branch ${own.id} is not registered in ${own.parentUrl} any more; its history below the fork may be collected`, {
          details: { branchId: own.id },
        });
      }
      if (nowMs >= current.expiresAt) throw expired(own.id, own.parentUrl, current.expiresAt);
      const ttlMs = options.ttlMs ?? current.ttlMs;
      return { ...current, ttlMs, expiresAt: Math.max(current.expiresAt, nowMs + ttlMs) };
    });
    return renewed!.value;
  } finally {
    await parent.close();
  }
}

export interface DeleteBranchReport {
  readonly branchId: string;
  readonly objectsDeleted: number;
}

/**
 * Deletes the branch: refused while one of its shards has a live writer. The root is
 * marked first (nodes then refuse it instead of creating a deployment there), then its
 * globals, its registration in the parent, every object of its own, and the mark. Nothing
 * of the parent is touched. A run killed midway is finished by running it again.
 */
export async function deleteBranch(options: BranchLifecycleOptions & { readonly onProgress?: (objectsDeleted: number) => void }): Promise<DeleteBranchReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { store } = options;
  const own = store instanceof InheritingObjectStore ? store : null;
  const globals = (await globalsObject(store, random).read())?.value ?? null;
  let mark = readDeletingMark(await store.get(bucketLayout.restoring()));
  if (globals === null && mark === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing): nothing to delete`);
  if (globals !== null) {
    if (globals.branch === null) throw notBranch(store);
    await refuseLiveLeases(generationStore(store, globals.generation), globals, clock.nowMs(), random, "deleting the branch");
    if (mark === null) {
      mark = { format: 1, kind: "deleting", branchId: globals.branch.id, parentUrl: globals.branch.parentUrl };
      await store.create(bucketLayout.restoring(), new TextEncoder().encode(JSON.stringify(mark)));
    }
    await store.delete(bucketLayout.globals());
  }
  const parent = await options.openStore(mark!.parentUrl);
  try {
    await parent.delete(bucketLayout.branchRegistration(mark!.branchId));
  } finally {
    await parent.close();
  }
  const branchId = mark!.branchId;
  let deleted = 0;
  const target = own === null ? store : own.ownStore;
  deleted += await deletePrefixes(target, [""], (count) => options.onProgress?.(count), (key) => key !== bucketLayout.restoring());
  await store.delete(bucketLayout.restoring());
  return { branchId, objectsDeleted: deleted + 1 };
}

interface DeletingMark {
  readonly format: 1;
  readonly kind: "deleting";
  readonly branchId: string;
  readonly parentUrl: string;
}

/** The mark a deletion leaves while it runs; anything else there (a restore's, a branch's being created) is not one. */
function readDeletingMark(found: Awaited<ReturnType<ObjectStore["get"]>>): DeletingMark | null {
  if (found === null || found === "not-modified") return null;
  try {
    const mark = JSON.parse(Buffer.from(found.body).toString("utf8")) as Partial<DeletingMark>;
    if (mark.kind === "deleting" && typeof mark.branchId === "string" && typeof mark.parentUrl === "string") return mark as DeletingMark;
  } catch {
    // Not ours: refused below like a root without globals.
  }
  throw new CairnError("RESTORE_UNFINISHED", "this root holds an unfinished restore or branch, not a branch being deleted; finish that, or delete the prefix");
}

async function branchGlobals(store: ObjectStore, random: Random): Promise<Globals> {
  const globals = (await globalsObject(store, random).read())?.value ?? null;
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing)`);
  if (globals.branch === null) throw notBranch(store);
  return globals;
}

function notBranch(store: ObjectStore): CairnError {
  return new CairnError("INVALID_ARGUMENT", `the deployment at ${store.description} is not a branch (cairn branch creates one)`);
}

function expired(branchId: string, parentUrl: string, expiresAt: number): CairnError {
  return new CairnError(
    "BRANCH_PARENT_EXPIRED",
    `branch ${branchId}'s registration in ${parentUrl} expired at ${new Date(expiresAt).toISOString()}: the parent may have collected its history below the fork`,
    { details: { branchId, expiresAt } },
  );
}
