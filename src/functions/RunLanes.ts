/**
 * Mutation runs queued one at a time by what they read first (a lane key: the shard and
 * the first document or range read). A run holds its lane from when it enters until it
 * leaves, and the runs waiting enter in the order they asked. Two users:
 * - a re-run after a lost optimistic-concurrency race waits in the lane of what it read
 *   first, behind the other re-runs of that hot document;
 * - a first run whose first read is a document another run holds waits there before it
 *   reads (early lock release, FunctionRuntime.prepare), then reads that run's queued
 *   write instead of losing a race to it.
 * A lane with nobody in or waiting costs nothing: entering a free lane is one map entry.
 */
export class RunLanes {
  /** Held lanes, each with the runs waiting for it in order. */
  private readonly held = new Map<string, (() => void)[]>();

  /** Whether a run holds `key`'s lane. */
  has(key: string): boolean {
    return this.held.has(key);
  }

  get size(): number {
    return this.held.size;
  }

  /** Enters `key`'s lane if nobody holds it: how to leave it; null if it is held. */
  tryEnter(key: string): (() => void) | null {
    if (this.held.has(key)) return null;
    this.held.set(key, []);
    return this.leaver(key);
  }

  /** Enters `key`'s lane once every run ahead has left it: how to leave it. */
  enter(key: string): Promise<() => void> {
    const leave = this.tryEnter(key);
    if (leave !== null) return Promise.resolve(leave);
    return new Promise((resolve) => this.held.get(key)!.push(() => resolve(this.leaver(key))));
  }

  /** Runs `job` in `key`'s lane. */
  async within<T>(key: string, job: () => Promise<T>): Promise<T> {
    const leave = await this.enter(key);
    try {
      return await job();
    } finally {
      leave();
    }
  }

  /** Leaving twice is leaving once: a run may end on several paths. */
  private leaver(key: string): () => void {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const waiting = this.held.get(key)!;
      const next = waiting.shift();
      if (next === undefined) this.held.delete(key);
      else next();
    };
  }
}

/**
 * A run's hold on the lane of the document it read first, if it took one
 * (FunctionRuntime.prepare): left when its write is queued, when it turns out to write
 * nothing, or when it ends in any other way — also when it entered only after it was
 * abandoned (a time limit), so that a lane is never left held.
 */
export class LaneHold {
  private leave: (() => void) | null = null;
  private ended = false;

  get holding(): boolean {
    return this.leave !== null;
  }

  take(leave: () => void): void {
    if (this.ended) leave();
    else this.leave = leave;
  }

  end(): void {
    this.ended = true;
    const leave = this.leave;
    this.leave = null;
    leave?.();
  }
}
