import type { Clock } from "../../src/base/clock.js";
import { CairnError } from "../../src/base/errors.js";
import type { Random } from "../../src/base/random.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "../../src/objectstore/ObjectStore.js";

/**
 * An ObjectStore wrapper that injects the failures real buckets produce, for scenario
 * tests and the seeded simulation: latency on the injected clock, transient errors that
 * change nothing, and lost responses (the write lands, the caller hears
 * STORE_AMBIGUOUS_OUTCOME). Rules are evaluated per call; `once` rules fire one time.
 */
export type StoreOperation = "get" | "create" | "casPut" | "delete" | "deleteMany" | "list";

export interface FaultPlan {
  readonly operations?: readonly StoreOperation[];
  readonly keyPattern?: RegExp;
  /** Probability 0..1 (with the seeded Random) or `once` for exactly the next match. */
  readonly rate?: number;
  readonly once?: boolean;
  readonly effect:
    | "transient"
    | "lose-response"
    | "unreachable"
    /**
     * Holds the call for a few turns of the event loop (no clock time passes): calls made
     * in consecutive turns overlap, as requests in flight together do.
     */
    | "next-turns"
    /** Holds the call for delayMs plus a uniform 0..jitterMs before it reaches the bucket. */
    | { readonly delayMs: number; readonly jitterMs?: number }
    /**
     * The call reaches the bucket at once, then the whole process pauses for pauseAfterMs
     * (plus 0..jitterMs): this answer and every other call of this store wait it out, as a
     * stop-the-world pause right after a request was served.
     */
    | { readonly pauseAfterMs: number; readonly jitterMs?: number }
    /** Holds the call until the promise settles (a test's gate), then lets it through. */
    | { readonly until: Promise<void> };
}

export class FaultyObjectStore implements ObjectStore {
  readonly description: string;
  private plans: FaultPlan[] = [];
  /** Calls seen per operation, for assertions about what was (not) done. */
  readonly calls: Record<StoreOperation, number> = { get: 0, create: 0, casPut: 0, delete: 0, deleteMany: 0, list: 0 };
  /** Calls currently held by an `until` gate. */
  held = 0;
  /** Keys read by get, in order, for assertions. */
  readonly reads: string[] = [];
  /** Keys written by create/casPut, in order, for assertions. */
  readonly writes: string[] = [];

  constructor(
    private readonly inner: ObjectStore,
    private readonly random: Random,
    private readonly clock: Clock,
  ) {
    this.description = `faulty(${inner.description})`;
  }

  inject(plan: FaultPlan): void {
    this.plans.push(plan);
  }

  /**
   * A stop-the-world pause of the process behind this store: every call made before
   * `untilMs` (on the clock) is held until then. Calls already in flight that reach the
   * bucket later land late — exactly what a paused zombie writer does.
   */
  pauseUntil(untilMs: number): void {
    this.pausedUntilMs = Math.max(this.pausedUntilMs, untilMs);
  }

  private pausedUntilMs = 0;

  clear(): void {
    this.plans = [];
  }

  /** Drops every rule and lets every held call through (teardown must never hang). */
  releaseAll(): void {
    this.plans = [];
    this.release();
    this.released = new Promise((resolve) => (this.release = resolve));
  }

  private release!: () => void;
  private released = new Promise<void>((resolve) => (this.release = resolve));

  async get(key: string, options?: GetOptions): Promise<GetResult | null | "not-modified"> {
    this.reads.push(key);
    return this.run("get", key, () => this.inner.get(key, options));
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    return this.run("create", key, async () => {
      const result = await this.inner.create(key, body);
      this.writes.push(key);
      return result;
    });
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    return this.run("casPut", key, async () => {
      const result = await this.inner.casPut(key, body, etag);
      this.writes.push(key);
      return result;
    });
  }

  async delete(key: string): Promise<void> {
    return this.run("delete", key, () => this.inner.delete(key));
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    return this.run("deleteMany", keys[0] ?? "", () => this.inner.deleteMany(keys));
  }

  async *list(prefix: string, options?: ListOptions): AsyncIterable<ListEntry> {
    const entries: ListEntry[] = await this.run("list", prefix, async () => {
      const collected: ListEntry[] = [];
      for await (const entry of this.inner.list(prefix, options)) collected.push(entry);
      return collected;
    });
    yield* entries;
  }

  async close(): Promise<void> {
    await this.inner.close();
  }

  private async run<T>(operation: StoreOperation, key: string, action: () => Promise<T>): Promise<T> {
    this.calls[operation]++;
    const pausedMs = this.pausedUntilMs - this.clock.nowMs();
    if (pausedMs > 0) await this.clock.sleep(pausedMs);
    let loseResponse = false;
    let pauseAfterMs = 0;
    for (const plan of this.matching(operation, key)) {
      const effect = plan.effect;
      if (typeof effect === "object" && "until" in effect) {
        this.held++;
        await Promise.race([effect.until, this.released]).finally(() => this.held--);
      } else if (typeof effect === "object" && "pauseAfterMs" in effect) {
        pauseAfterMs += effect.pauseAfterMs + Math.floor(this.random.float() * (effect.jitterMs ?? 0));
      } else if (typeof effect === "object") {
        await this.clock.sleep(effect.delayMs + Math.floor(this.random.float() * (effect.jitterMs ?? 0)));
      } else if (effect === "transient") {
        throw new CairnError("STORE_TRANSIENT", `injected transient failure of ${operation} ${key}`);
      } else if (effect === "next-turns") {
        for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
      } else if (effect === "unreachable") {
        throw new CairnError("STORE_UNREACHABLE", `injected: store unreachable for ${operation} ${key}`);
      } else {
        loseResponse = true;
      }
    }
    const result = await action();
    if (pauseAfterMs > 0) {
      this.pauseUntil(this.clock.nowMs() + pauseAfterMs);
      await this.clock.sleep(pauseAfterMs);
    }
    if (loseResponse) {
      throw new CairnError("STORE_AMBIGUOUS_OUTCOME", `injected: response to ${operation} ${key} was lost after it succeeded`);
    }
    return result;
  }

  private matching(operation: StoreOperation, key: string): FaultPlan[] {
    const fired: FaultPlan[] = [];
    for (const plan of this.plans) {
      if (plan.operations && !plan.operations.includes(operation)) continue;
      if (plan.keyPattern && !plan.keyPattern.test(key)) continue;
      if (plan.once) {
        fired.push(plan);
        this.plans = this.plans.filter((candidate) => candidate !== plan);
      } else if (this.random.float() < (plan.rate ?? 1)) {
        fired.push(plan);
      }
    }
    return fired;
  }
}
