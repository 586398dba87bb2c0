import { systemClock } from "../base/clock.js";
import { systemRandom } from "../base/random.js";
import { openObjectStore, assertConditionalWrites } from "../objectstore/index.js";
import { reshardObjectStore, type ReshardProgress } from "../shard/reshardObjectStore.js";
import { throttled } from "./progressReporter.js";

export interface ReshardCommandOptions {
  readonly store: string;
  readonly to: number;
  readonly workDir?: string;
  readonly lockTtlMs?: number;
}

/**
 * `cairn reshard --to N`: moves a stopped deployment to N shards (shard/reshardObjectStore)
 * with a progress bar on stderr, and prints what it did. Refused while any node writes the
 * deployment or another reshard runs; safe to re-run after an interruption.
 */
export async function reshardCommand(options: ReshardCommandOptions): Promise<void> {
  const store = await openObjectStore(options.store);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const bar = new ProgressBar(process.stderr);
  try {
    await assertConditionalWrites(store);
    const report = await reshardObjectStore({
      store,
      toShards: options.to,
      clock: systemClock,
      random: systemRandom,
      ...(options.workDir !== undefined ? { workDirectory: options.workDir } : {}),
      ...(options.lockTtlMs !== undefined ? { lockTtlMs: options.lockTtlMs } : {}),
      onProgress: (progress) => bar.update(progress),
    });
    bar.done();
    if (!report.changed) {
      say(`the deployment already has ${report.toShards} shard(s): nothing to do${report.objectsDeleted > 0 ? ` (deleted ${report.objectsDeleted} leftover object(s))` : ""}`);
      return;
    }
    say(
      `resharded ${report.fromShards} → ${report.toShards} shard(s): ${report.documents} document(s) in layout generation ${report.generation}; ` +
        `deleted ${report.objectsDeleted} object(s) of the old layout`,
    );
    for (const [shard, lane] of report.lanes.entries()) {
      say(`shard ${shard}: ${lane.documents} document(s), ${lane.indexEntries} index entries, ${lane.receipts} receipt(s)`);
    }
  } finally {
    bar.done();
    await store.close();
  }
}

const BAR_WIDTH = 30;

/** One line redrawn in place on a terminal; a line at most every 500 ms otherwise. */
class ProgressBar {
  private readonly line: (text: string) => void;
  private drawn = false;
  private documentsRead = 0;

  constructor(private readonly stream: NodeJS.WriteStream) {
    const throttledLine = throttled((text) => stream.write(`${text}\n`));
    this.line = stream.isTTY
      ? (text) => {
          stream.write(`\r${text.padEnd(100).slice(0, Math.max(20, (stream.columns ?? 100) - 1))}`);
          this.drawn = true;
        }
      : throttledLine;
  }

  update(progress: ReshardProgress): void {
    switch (progress.phase) {
      case "lock":
        this.event(`reshard: lock taken; writing layout generation ${progress.generation}`);
        return;
      case "read":
        this.documentsRead += progress.documents;
        this.event(`reshard: read old shard ${progress.shard + 1}/${progress.shards} (${progress.documents} stored revision(s))`);
        return;
      case "write": {
        const fraction = this.documentsRead === 0 ? 1 : Math.min(1, progress.totalDocuments / this.documentsRead);
        const filled = Math.round(fraction * BAR_WIDTH);
        this.line(
          `[${"#".repeat(filled)}${".".repeat(BAR_WIDTH - filled)}] ${Math.round(fraction * 100)}% ` +
            `new shard ${progress.shard + 1}/${progress.shards}, ${progress.totalDocuments} document(s) written`,
        );
        return;
      }
      case "written":
        this.event(`reshard: new shard ${progress.shard + 1}/${progress.shards} written (${progress.documents} document(s))`);
        return;
      case "switch":
        this.event(`reshard: globals switched to generation ${progress.generation} (${progress.numShards} shard(s))`);
        return;
      case "cleanup":
        this.line(`reshard: deleting layout generation ${progress.generation}: ${progress.objectsDeleted} object(s)`);
        return;
    }
  }

  /** A line that stays (lifecycle), after any bar drawn in place. */
  private event(text: string): void {
    this.done();
    this.stream.write(`${text}\n`);
  }

  done(): void {
    if (!this.drawn) return;
    this.stream.write("\n");
    this.drawn = false;
  }
}
