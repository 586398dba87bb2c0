import { type Clock, hasErrorCode } from "../base/index.js";
import type { Manifest } from "../manifest/index.js";
import type { EngineState } from "../shard/index.js";

/** What a lease watcher needs of its shard's engine. */
export interface TakeoverEngine {
  readonly shard: number;
  readonly state: EngineState;
  refreshManifest(): Promise<Manifest>;
  acquire(): Promise<void>;
}

export interface LeaseWatcherOptions {
  readonly engine: TakeoverEngine;
  readonly nodeId: string;
  readonly clock: Clock;
  /** How often the manifest is read while another node writes. Default 2 s (1,800 GETs an hour). */
  readonly checkIntervalMs?: number;
  /**
   * The largest difference between this node's wall clock and the writer's that the
   * takeover tolerates: a lease counts as lapsed only once it expired this long ago here.
   * Larger means slower failover; smaller risks taking over from a live writer whose clock
   * is behind (safe — it is fenced and demotes — but its in-flight writes fail over).
   */
  readonly maxClockSkewMs: number;
  readonly onAcquired?: () => void;
  readonly onError?: (error: unknown) => void;
}

export const LEASE_CHECK_INTERVAL_MS_DEFAULT = 2_000;

/**
 * A standby's watch over one shard's lease (DESIGN.md §9): while another node writes, it
 * re-reads the manifest on a cadence; once the lease lapsed (expired more than
 * maxClockSkewMs ago on this node's clock), or was relinquished, or names this node
 * itself (a lease its previous run left, or its own engine poisoned), it acquires: the
 * engine bumps the epoch, catches up, fences the tail and becomes the writer, without a
 * restart. Losing the race to another standby is LEASE_HELD, and the watch goes on.
 *
 * Safety never depends on this timing: every acquire moves the epoch and every commit is
 * verified against the manifest (DESIGN.md §4), so a premature takeover only fences the
 * old writer, which then stops writing.
 */
export class LeaseWatcher {
  private readonly checkIntervalMs: number;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(private readonly options: LeaseWatcherOptions) {
    this.checkIntervalMs = options.checkIntervalMs ?? LEASE_CHECK_INTERVAL_MS_DEFAULT;
  }

  start(): void {
    if (this.stopping.signal.aborted) return;
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** Whether the lease of `manifest` may be taken by this node at `nowMs`. */
  static lapsed(manifest: Manifest, nodeId: string, nowMs: number, maxClockSkewMs: number): boolean {
    if (manifest.writer === null || manifest.writer.nodeId === nodeId) return true;
    return nowMs > manifest.leaseExpiresAt + maxClockSkewMs;
  }

  private async run(): Promise<void> {
    const { engine, clock } = this.options;
    while (!this.stopping.signal.aborted) {
      try {
        await clock.sleep(this.checkIntervalMs, this.stopping.signal);
      } catch {
        return;
      }
      const state = engine.state.kind;
      if (state === "writing" || state === "closed") continue;
      try {
        const manifest = await engine.refreshManifest();
        if (!LeaseWatcher.lapsed(manifest, this.options.nodeId, clock.nowMs(), this.options.maxClockSkewMs)) continue;
        if (this.stopping.signal.aborted) return;
        await engine.acquire();
        if ((engine.state as EngineState).kind === "writing") this.options.onAcquired?.();
      } catch (error) {
        if (!hasErrorCode(error, "LEASE_HELD")) this.options.onError?.(error);
      }
    }
  }
}
