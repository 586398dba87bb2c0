import { CairnError, isCasConflict, type Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { CasFields, CasSnapshot } from "./CasObject.js";
import { globalsObject, type Globals } from "./Globals.js";

/**
 * The reshard lock: one reshard at a time, and no writer of the old layout while it runs.
 *
 * The lock is a field of `globals` (owner, expiry, the attempt's generation), not an
 * object of its own, so that taking it, renewing it and the final layout switch are CASes
 * on one object. That is what makes a reshard paused past its lock's expiry harmless:
 *
 * - A node about to write the deployment (ShardedStore, before every acquire) calls
 *   `claimLayoutForWriting`: a live lock refuses it (RESHARD_IN_PROGRESS), an expired one
 *   it breaks with a CAS on globals before it writes anything.
 * - The paused reshard's switch is a CAS on the globals it last wrote; after any break,
 *   renewal or other reshard it fails, so writes made to the old layout meanwhile are
 *   never left behind by a switch to a layout that lacks them.
 *
 * Each attempt writes into a generation of its own, one above every generation an attempt
 * ever took (`highestGeneration`): a zombie's late writes never land in the layout a later
 * attempt builds, and the generations between `generation` and `highestGeneration` are
 * known leftovers that the next reshard deletes.
 */
export type ReshardLock = NonNullable<Globals["reshard"]>;

export function isReshardLockHeld(globals: Globals, nowMs: number): boolean {
  return globals.reshard !== null && nowMs <= globals.reshard.expiresAt;
}

const CAS_ATTEMPTS_MAX = 8;

/**
 * For a node about to write the layout of `generation`: refuses while a reshard holds the
 * deployment, breaks an expired lock, and refuses a layout a reshard has replaced
 * (DEPLOYMENT_RESHARDED). After it returns, a reshard that had the lock can no longer
 * switch the layout.
 */
export async function claimLayoutForWriting(store: ObjectStore, random: Random, nowMs: () => number, generation: number): Promise<void> {
  const object = globalsObject(store, random);
  for (let attempt = 1; ; attempt++) {
    const current = await object.read();
    if (current === null) throw new CairnError("DEPLOYMENT_MISMATCH", `the globals of the deployment at ${store.description} disappeared`);
    if (current.value.generation !== generation) throw resharded(store, generation, current.value.generation);
    if (current.value.reshard === null) return;
    if (isReshardLockHeld(current.value, nowMs())) throw reshardInProgress(current.value.reshard);
    try {
      await object.replace(current, { ...fieldsOf(current.value), reshard: null });
      return;
    } catch (error) {
      if (!isCasConflict(error) || attempt >= CAS_ATTEMPTS_MAX) throw error;
    }
  }
}

export interface TakeLockRequest {
  readonly owner: string;
  readonly nowMs: number;
  readonly ttlMs: number;
  readonly toShards: number;
}

/** The lock as its holder sees it: renewals, the layout switch and the release go through here. */
export class HeldReshardLock {
  private constructor(
    private readonly store: ObjectStore,
    private readonly random: Random,
    private snapshot: CasSnapshot<Globals>,
    /** The layout the reshard started from. */
    readonly from: Globals,
  ) {}

  /**
   * Takes the lock: RESHARD_IN_PROGRESS while another holder's lock is live, including
   * one that took it between our read and our write.
   */
  static async take(store: ObjectStore, random: Random, request: TakeLockRequest): Promise<HeldReshardLock> {
    const object = globalsObject(store, random);
    for (let attempt = 1; ; attempt++) {
      const current = await object.read();
      if (current === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing)`);
      if (isReshardLockHeld(current.value, request.nowMs)) throw reshardInProgress(current.value.reshard!);
      const generation = Math.max(current.value.generation, current.value.highestGeneration) + 1;
      const lock: ReshardLock = {
        owner: request.owner,
        expiresAt: request.nowMs + request.ttlMs,
        generation,
        toShards: request.toShards,
        startedAt: request.nowMs,
      };
      try {
        const taken = await object.replace(current, { ...fieldsOf(current.value), highestGeneration: generation, reshard: lock });
        return new HeldReshardLock(store, random, taken, current.value);
      } catch (error) {
        if (!isCasConflict(error) || attempt >= CAS_ATTEMPTS_MAX) throw error;
      }
    }
  }

  get generation(): number {
    return this.lock.generation;
  }

  get owner(): string {
    return this.lock.owner;
  }

  /**
   * Generations earlier attempts took and never made current: their keys are garbage.
   * (Generations retired by a finished reshard are in `from.retired`.)
   */
  get abandonedGenerations(): number[] {
    const abandoned: number[] = [];
    for (let generation = this.from.generation + 1; generation < this.generation; generation++) abandoned.push(generation);
    return abandoned;
  }

  /** Extends the lock; RESHARD_IN_PROGRESS when it was broken or taken meanwhile. */
  async renew(nowMs: number, ttlMs: number): Promise<void> {
    await this.casOwn({ ...fieldsOf(this.snapshot.value), reshard: { ...this.lock, expiresAt: nowMs + ttlMs } }, "renew its lock");
  }

  /**
   * The commit point: globals name the new generation and shard count, the old
   * generation is recorded as retired (to delete, or with `keep` to keep until then),
   * and the lock is freed, in one CAS.
   */
  async switchLayout(keep?: { readonly keepUntil: number; readonly closedAtTs: number }): Promise<Globals> {
    const from = this.snapshot.value;
    await this.casOwn(
      {
        ...fieldsOf(from),
        numShards: this.lock.toShards,
        generation: this.lock.generation,
        retired: [...from.retired, { generation: from.generation, numShards: from.numShards, ...(keep ?? {}) }],
        reshard: null,
      },
      "switch the layout",
    );
    return this.snapshot.value;
  }

  /** Frees the lock if we still hold it; a lock broken or taken meanwhile is left alone. */
  async release(): Promise<void> {
    if (this.snapshot.value.reshard === null) return;
    try {
      this.snapshot = await globalsObject(this.store, this.random).replace(this.snapshot, { ...fieldsOf(this.snapshot.value), reshard: null });
    } catch (error) {
      if (!isCasConflict(error)) throw error;
    }
  }

  private get lock(): ReshardLock {
    const lock = this.snapshot.value.reshard;
    if (lock === null) throw new CairnError("INTERNAL", "the reshard lock was used after it was released");
    return lock;
  }

  private async casOwn(fields: CasFields<Globals>, what: string): Promise<void> {
    try {
      this.snapshot = await globalsObject(this.store, this.random).replace(this.snapshot, fields);
    } catch (error) {
      if (!isCasConflict(error)) throw error;
      const current = await globalsObject(this.store, this.random).read();
      const holder = current?.value.reshard?.owner ?? null;
      throw new CairnError(
        "RESHARD_IN_PROGRESS",
        `this reshard could not ${what}: its lock expired and ${holder === null ? "a node broke it to write the deployment" : `${holder} took it`}; ` +
          `it switched nothing (run it again)`,
        { details: { owner: holder } },
      );
    }
  }
}

/** Removes `generation` from the retired list once its keys are deleted. */
export async function dropRetiredGeneration(store: ObjectStore, random: Random, generation: number): Promise<void> {
  await globalsObject(store, random).update((current) => {
    if (current === null || !current.retired.some((old) => old.generation === generation)) return null;
    return { ...fieldsOf(current), retired: current.retired.filter((old) => old.generation !== generation) };
  });
}

function fieldsOf(globals: Globals): CasFields<Globals> {
  const { version: _version, nonce: _nonce, ...fields } = globals;
  return fields;
}

/** RESHARD_IN_PROGRESS naming the holder of `lock`. */
export function reshardInProgress(lock: ReshardLock): CairnError {
  return new CairnError(
    "RESHARD_IN_PROGRESS",
    `a reshard (${lock.owner}, to ${lock.toShards} shard(s)) holds the deployment until ${new Date(lock.expiresAt).toISOString()}; ` +
      `wait for it to finish, or if that process is gone, run again once its lock expires`,
    { details: { owner: lock.owner, expiresAt: lock.expiresAt, toShards: lock.toShards } },
  );
}

function resharded(store: ObjectStore, opened: number, current: number): CairnError {
  return new CairnError(
    "DEPLOYMENT_RESHARDED",
    `the deployment at ${store.description} was resharded (layout generation ${opened} → ${current}); restart this node to serve the new layout`,
    { details: { openedGeneration: opened, currentGeneration: current } },
  );
}
