import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { Clock } from "../../src/base/clock.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { ShardHarness, type BucketFactory } from "../support/shardHarness.js";

/**
 * Shared pieces of the replica tests: a clock that records the sleeps made through it (so
 * a test can tell "the tailer polled and now waits N ms" from counts, never from timings),
 * an fs bucket factory, and a per-test harness whose cleanups (tailers, watchers) run
 * before the harness closes the engines under them.
 */

/** A view of a base clock that records every sleep made through it. */
export class RecordingClock implements Clock {
  /** The `ms` of every sleep asked for, in order. */
  readonly sleeps: number[] = [];
  /** Sleeps not yet settled (resolved or aborted). */
  pending = 0;

  constructor(private readonly base: Clock) {}

  nowMs(): number {
    return this.base.nowMs();
  }

  monotonicMs(): number {
    return this.base.monotonicMs();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    this.pending++;
    const settled = () => {
      this.pending--;
    };
    const sleeping = this.base.sleep(ms, signal);
    sleeping.then(settled, settled);
    return sleeping;
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
    for (const step of steps.reverse()) await step();
    steps = [];
    await harness?.close();
    harness = undefined;
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
