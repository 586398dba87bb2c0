import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { Clock, Timer } from "../../src/base/clock.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { ShardHarness, type BucketFactory } from "../support/shardHarness.js";

/**
 * Shared pieces of the replica tests: a clock that records the sleeps made through it (so
 * a test can tell "the tailer polled and now waits N ms" from counts, never from timings),
 * an fs bucket factory, and a per-test harness whose cleanups (tailers, watchers) run
 * before the harness closes the engines under them.
 */

/**
 * A view of a base clock that records the sleeps made through it whose `ms` `tracked`
 * accepts (a tailer's poll waits, told apart from its waitFor timeouts by their values).
 */
export class RecordingClock implements Clock {
  /** The `ms` of every tracked sleep asked for, in order. */
  readonly sleeps: number[] = [];
  /** Tracked sleeps not yet settled (resolved or aborted). */
  pending = 0;
  private lastSettled = true;

  constructor(
    private readonly base: Clock,
    private readonly tracked: (ms: number) => boolean = () => true,
  ) {}

  nowMs(): number {
    return this.base.nowMs();
  }

  monotonicMs(): number {
    return this.base.monotonicMs();
  }

  /** Whether the newest tracked sleep is still going on (its sleeper waits in it). */
  get sleeping(): boolean {
    return !this.lastSettled;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!this.tracked(ms)) return this.base.sleep(ms, signal);
    this.sleeps.push(ms);
    this.pending++;
    this.lastSettled = false;
    const index = this.sleeps.length;
    const settled = () => {
      this.pending--;
      if (index === this.sleeps.length) this.lastSettled = true;
    };
    const sleeping = this.base.sleep(ms, signal);
    sleeping.then(settled, settled);
    return sleeping;
  }

  setTimer(ms: number, callback: () => void): Timer {
    return this.base.setTimer(ms, callback);
  }
}

/** Lets the event loop run `count` times (for "nothing more happens" checks; bounded by turns, not time). */
export async function turns(count = 50): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** A fresh FsObjectStore bucket in a temp directory. */
export const fsBucket: BucketFactory = {
  name: "fs",
  open: async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-replica-fs-"));
    const store = new FsObjectStore(root);
    return {
      store,
      close: async () => {
        await store.close();
        rmSync(root, { recursive: true, force: true });
      },
    };
  },
};

/**
 * For a describe block: a function creating the test's harness on `factory`, and a
 * `cleanup` to register teardown steps that must run before the harness closes (stopping
 * a tailer or a watcher before its engine closes), in reverse order of registration.
 */
export function replicaHarnessPerTest(factory: BucketFactory): {
  setup: () => Promise<ShardHarness>;
  cleanup: (step: () => Promise<unknown> | unknown) => void;
} {
  let harness: ShardHarness | undefined;
  let steps: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    try {
      for (const step of steps.reverse()) await step();
    } finally {
      steps = [];
      await harness?.close();
      harness = undefined;
    }
  });
  return {
    setup: async () => {
      harness = await ShardHarness.create(factory);
      return harness;
    },
    cleanup: (step) => {
      steps.push(step);
    },
  };
}
