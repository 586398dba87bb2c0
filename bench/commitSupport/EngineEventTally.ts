import type { EngineEvent } from "../../src/shard/ShardEngine.js";

/**
 * The measured writer's maintenance as the open-loop windows report it: snapshots and GC
 * passes completed, and driver errors, counted from the engine's events. A window takes
 * the counts when it opens and when it closes; the difference is what fell inside it.
 */
export interface EngineEventCounts {
  readonly snapshots: number;
  readonly gcPasses: number;
  readonly driverErrors: number;
}

/** Counts the engine events a window reports; feed it every event of the measured writer. */
export class EngineEventTally {
  private counts = { snapshots: 0, gcPasses: 0, driverErrors: 0 };
  private lastError: string | null = null;

  observe(event: EngineEvent): void {
    if (event.type === "snapshot") this.counts.snapshots++;
    else if (event.type === "gc") this.counts.gcPasses++;
    else if (event.type === "driver-error") {
      this.counts.driverErrors++;
      this.lastError = `${event.driver}: ${event.error instanceof Error ? event.error.message : String(event.error)}`;
    }
  }

  get current(): EngineEventCounts {
    return { ...this.counts };
  }

  get lastDriverError(): string | null {
    return this.lastError;
  }
}

export function eventsSince(before: EngineEventCounts, now: EngineEventCounts): EngineEventCounts {
  return {
    snapshots: now.snapshots - before.snapshots,
    gcPasses: now.gcPasses - before.gcPasses,
    driverErrors: now.driverErrors - before.driverErrors,
  };
}
