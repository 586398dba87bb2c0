import { type Clock, repeatEvery } from "../base/index.js";
import { frontierHeldBack, type ShardFrontier } from "./frontierHeldBack.js";

/** One shard as the watch sees it. */
export interface WatchedShard extends ShardFrontier {
  /** The node the manifest names as the writer (null: none). */
  readonly writer: string | null;
  readonly writerLive: boolean;
  /** Whether this node writes it (its tail then idles). */
  readonly writing: boolean;
  /** How long since this node's tail was last known complete (null: never yet). */
  readonly stalenessMs: number | null;
  readonly lastError: string | null;
}

export interface FrontierWatchOptions {
  readonly clock: Clock;
  readonly log: (line: string) => void;
  readonly shards: () => readonly WatchedShard[];
  /** How long a stall lasts before it is logged (default FRONTIER_STALL_WARN_MS). */
  readonly stallWarnMs?: number;
  /** How long a followed shard's tail may be incomplete before it is logged (default stallWarnMs). */
  readonly tailWarnMs?: number;
  /** How often the shards are looked at (default a fifth of stallWarnMs). */
  readonly intervalMs?: number;
}

/** A frontier (or a tail) that has not moved for this long while commits wait on it is logged. */
export const FRONTIER_STALL_WARN_MS = 5_000;

/**
 * Says in the node's log when reads are held back (DESIGN.md §5): the common frontier — the
 * lowest of the shards' — has not advanced for `stallWarnMs` while another shard has
 * commits above it (naming the shard that pins it and its writer, and whether its lease is
 * live), and when this node's tail of a shard it follows has not been complete for that
 * long (naming the shard, its writer and the last error). Each episode is logged once when
 * it starts and once when it ends, so a long stall does not flood the log.
 *
 * An idle deployment is no stall: with no shard above the lowest, nothing waits.
 */
export class FrontierWatch {
  private readonly stallWarnMs: number;
  private readonly tailWarnMs: number;
  private readonly intervalMs: number;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  /** The common frontier last seen, and since when (monotonic ms) it has not moved while held back. */
  private lowestTs = -1;
  private heldSinceMs: number | null = null;
  private stallLogged = false;
  /** Per followed shard whose lag was logged: since when. */
  private readonly laggingLogged = new Map<number, number>();

  constructor(private readonly options: FrontierWatchOptions) {
    this.stallWarnMs = options.stallWarnMs ?? FRONTIER_STALL_WARN_MS;
    this.tailWarnMs = options.tailWarnMs ?? this.stallWarnMs;
    this.intervalMs = options.intervalMs ?? Math.max(50, Math.floor(this.stallWarnMs / 5));
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** One look at the shards (the loop's step; tests call it directly). */
  check(): void {
    const shards = this.options.shards();
    if (shards.length === 0) return;
    const nowMs = this.options.clock.monotonicMs();
    this.checkCommonFrontier(shards, nowMs);
    this.checkTails(shards, nowMs);
  }

  private checkCommonFrontier(shards: readonly WatchedShard[], nowMs: number): void {
    const held = frontierHeldBack(shards);
    if (held === null) return;
    const { pin, newestCommitTs: newestTs } = held;
    const heldBack = held.heldBackUs > 0;
    if (pin.frontierTs !== this.lowestTs || !heldBack) {
      if (this.stallLogged && this.heldSinceMs !== null) this.options.log(`frontier: moving again (ts ${pin.frontierTs}) after ${seconds(nowMs - this.heldSinceMs)} held back`);
      this.lowestTs = pin.frontierTs;
      this.heldSinceMs = heldBack ? nowMs : null;
      this.stallLogged = false;
      return;
    }
    this.heldSinceMs ??= nowMs;
    if (this.stallLogged || nowMs - this.heldSinceMs < this.stallWarnMs) return;
    this.stallLogged = true;
    const writer = pin.writing ? "this node" : pin.writer === null ? "none" : `${pin.writer}${pin.writerLive ? "" : " (its lease lapsed)"}`;
    this.options.log(
      `warning: frontier: has not advanced for ${seconds(nowMs - this.heldSinceMs)} at ts ${pin.frontierTs}, held back by shard ${pin.shard} ` +
        `(${Math.round((newestTs - pin.frontierTs) / 1000)} ms behind the newest commit; writer ${writer}): commits on other shards stay invisible until it moves` +
        (pin.writerLive || pin.writing ? "" : " — a shard without a live writer waits for a takeover"),
    );
  }

  private checkTails(shards: readonly WatchedShard[], nowMs: number): void {
    for (const shard of shards) {
      const lagging = !shard.writing && (shard.stalenessMs === null || shard.stalenessMs >= this.tailWarnMs);
      const loggedAtMs = this.laggingLogged.get(shard.shard);
      if (!lagging) {
        if (loggedAtMs !== undefined) this.options.log(`shard ${shard.shard}: this node's tail caught up again`);
        this.laggingLogged.delete(shard.shard);
        continue;
      }
      if (loggedAtMs !== undefined || shard.stalenessMs === null) continue;
      this.laggingLogged.set(shard.shard, nowMs);
      this.options.log(
        `warning: shard ${shard.shard}: this node's tail has not been complete for ${seconds(shard.stalenessMs)} (writer ${shard.writer ?? "none"}` +
          `${shard.lastError !== null ? `; last error: ${shard.lastError}` : ""}): reads here lag the shard's log`,
      );
    }
  }

  private run(): Promise<void> {
    return repeatEvery(this.options.clock, this.intervalMs, this.stopping.signal, () => this.check());
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
