import { LAYOUT_CHECK_DURING_RESHARD_MS, LAYOUT_CHECK_INTERVAL_MS, type Clock, type Random } from "../base/index.js";
import { globalsObject } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/** The layout a node opened was replaced by a reshard (DESIGN.md §10). */
export interface LayoutRetired {
  readonly openedGeneration: number;
  /** The generation `globals` names now (null: the globals are gone). */
  readonly currentGeneration: number | null;
  readonly numShards: number | null;
  /** For operators: what happened, in a sentence. */
  readonly reason: string;
}

export interface LayoutWatcherOptions {
  /** The bucket's root store (where `globals` lives), not a generation's. */
  readonly store: ObjectStore;
  readonly random: Random;
  readonly clock: Clock;
  /** The layout generation the node opened. */
  readonly generation: number;
  /** Called once, when `globals` first name another generation. */
  readonly onRetired: (retired: LayoutRetired) => void;
  /** A read of `globals` failed (the watcher goes on). */
  readonly onError?: (error: unknown) => void;
  /** Default LAYOUT_CHECK_INTERVAL_MS. */
  readonly intervalMs?: number;
  /** Default LAYOUT_CHECK_DURING_RESHARD_MS. */
  readonly duringReshardMs?: number;
}

/**
 * Watches a node's layout: reads `globals` every `intervalMs` (more often while a reshard
 * holds the lock, since its switch may come at any moment), and at once when asked
 * (`check`: a follower's shard manifest disappeared, or a new writer fenced the shard —
 * a reshard reading it). When the generation changed, the node serves a retired layout:
 * `onRetired` is called once and the watcher stops.
 *
 * Lifecycle: created stopped; start → watching → stop (final) or retired (final).
 */
export class LayoutWatcher {
  private readonly stopping = new AbortController();
  private sleeping: AbortController | null = null;
  private loop: Promise<void> | null = null;
  private checkRequested = false;
  private retired: LayoutRetired | null = null;

  constructor(private readonly options: LayoutWatcherOptions) {}

  /** Whether (and why) the watched layout was found retired. */
  get retiredLayout(): LayoutRetired | null {
    return this.retired;
  }

  start(): void {
    if (this.loop !== null || this.stopping.signal.aborted) return;
    this.loop = this.run();
  }

  /** Reads `globals` now rather than at the next interval. */
  check(): void {
    this.checkRequested = true;
    this.sleeping?.abort();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.sleeping?.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const intervalMs = this.options.intervalMs ?? LAYOUT_CHECK_INTERVAL_MS;
    const duringReshardMs = this.options.duringReshardMs ?? LAYOUT_CHECK_DURING_RESHARD_MS;
    let waitMs = intervalMs;
    while (!this.stopping.signal.aborted && this.retired === null) {
      if (!this.checkRequested) await this.sleep(waitMs);
      if (this.stopping.signal.aborted) return;
      this.checkRequested = false;
      try {
        waitMs = (await this.readOnce()) ? duringReshardMs : intervalMs;
      } catch (error) {
        this.options.onError?.(error);
        waitMs = intervalMs;
      }
    }
  }

  /** One read of `globals`; whether a reshard holds the lock (check again soon). */
  private async readOnce(): Promise<boolean> {
    const { store, random, generation } = this.options;
    const current = await globalsObject(store, random).read();
    if (this.stopping.signal.aborted) return false;
    if (current === null) {
      this.retire({ openedGeneration: generation, currentGeneration: null, numShards: null, reason: `the deployment's globals are gone from ${store.description}` });
      return false;
    }
    const globals = current.value;
    if (globals.generation !== generation) {
      this.retire({
        openedGeneration: generation,
        currentGeneration: globals.generation,
        numShards: globals.numShards,
        reason: `the deployment was resharded to ${globals.numShards} shard(s) (layout generation ${generation} → ${globals.generation}); this node's layout is retired`,
      });
      return false;
    }
    return globals.reshard !== null;
  }

  private retire(retired: LayoutRetired): void {
    if (this.retired !== null) return;
    this.retired = retired;
    try {
      this.options.onRetired(retired);
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private async sleep(ms: number): Promise<void> {
    const controller = new AbortController();
    this.sleeping = controller;
    const stop = () => controller.abort();
    this.stopping.signal.addEventListener("abort", stop, { once: true });
    try {
      await this.options.clock.sleep(ms, controller.signal);
    } catch {
      // Woken early: a check was asked for, or the watcher stops.
    } finally {
      this.stopping.signal.removeEventListener("abort", stop);
      this.sleeping = null;
    }
  }
}
