import { COMMAND_HEAP_MIB_DEFAULT, runCommandWorker } from "./commandWorker.js";
import type { ReshardProgress, ReshardReport } from "../shard/index.js";
import { throttled } from "./progressReporter.js";
import type { ReshardWorkerData, ReshardWorkerMessage } from "./reshardWorker.js";

export interface ReshardCommandOptions {
  readonly store: string;
  readonly to: number;
  readonly workDir?: string;
  readonly lockTtlMs?: number;
  readonly heapMib?: number;
  readonly allowLiveFollowers?: boolean;
}

/**
 * The reshard's JavaScript heap limit. Its live heap is small (a snapshot restore's
 * decoded parts at most, ~150 MiB), but V8 collects lazily under the default limits: a
 * 1M-document reshard then peaks at ~620 MiB RSS, and at ~450 MiB with the old space
 * capped here and the young generation at 16 MiB.
 */
export const RESHARD_HEAP_MIB_DEFAULT = COMMAND_HEAP_MIB_DEFAULT;

/**
 * `cairn reshard --to N`: moves a stopped deployment to N shards (shard/reshardObjectStore)
 * with a progress bar on stderr, and prints what it did. Refused while any node writes the
 * deployment, while followers are registered live (NODES_LIVE, unless
 * --allow-live-followers), or while another reshard runs; safe to re-run after an
 * interruption.
 *
 * The reshard runs in a worker thread with a capped heap (RESHARD_HEAP_MIB_DEFAULT, or
 * `--heap-mib`), which bounds the command's memory whatever the store's size.
 */
export async function reshardCommand(options: ReshardCommandOptions): Promise<void> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const bar = new ProgressBar(process.stderr);
  try {
    const report = await runInWorker(
      {
        storeUrl: options.store,
        toShards: options.to,
        ...(options.workDir !== undefined ? { workDirectory: options.workDir } : {}),
        ...(options.lockTtlMs !== undefined ? { lockTtlMs: options.lockTtlMs } : {}),
        ...(options.allowLiveFollowers === true ? { allowLiveFollowers: true } : {}),
      },
      options.heapMib ?? RESHARD_HEAP_MIB_DEFAULT,
      (progress) => bar.update(progress),
      (shardedTables) => bar.plan(shardedTables),
    );
    bar.done();
    if (!report.changed) {
      say(`the deployment already has ${report.toShards} shard(s): nothing to do${report.objectsDeleted > 0 ? ` (deleted ${report.objectsDeleted} leftover object(s))` : ""}`);
      return;
    }
    // Nothing moved, as planned, unless scheduled jobs went to their lanes: then the lanes are shown.
    if (bar.movesNothing && report.lanes.every((lane, shard) => shard === 0 || lane.documents === 0)) {
      say(
        `resharded ${report.fromShards} → ${report.toShards} shard(s): nothing moved: no table has a shard key, so all ${report.documents} document(s) stay on shard 0 ` +
          `(layout generation ${report.generation}); deleted ${report.objectsDeleted} object(s) of the old layout`,
      );
    } else {
      sayLanes(report, say);
    }
    if (report.cleanupError !== null) {
      process.stderr.write(
        `cairn: warning: the reshard is done, but deleting the old layout stopped (${report.cleanupError}); ` +
          `run \`cairn reshard --to ${report.toShards}\` again to finish it\n`,
      );
    }
  } finally {
    bar.done();
  }
}

/** What a reshard that moved documents did, shard by shard. */
function sayLanes(report: ReshardReport, say: (line: string) => void): void {
  say(
    `resharded ${report.fromShards} → ${report.toShards} shard(s): ${report.documents} document(s) in layout generation ${report.generation}; ` +
      `deleted ${report.objectsDeleted} object(s) of the old layout`,
  );
  for (const [shard, lane] of report.lanes.entries()) {
    say(`shard ${shard}: ${lane.documents} document(s), ${lane.indexEntries} index entries, ${lane.receipts} receipt(s)`);
  }
}

function runInWorker(
  data: ReshardWorkerData,
  heapMib: number,
  onProgress: (progress: ReshardProgress) => void,
  onPlan: (shardedTables: readonly string[]) => void,
): Promise<ReshardReport> {
  return runCommandWorker<ReshardWorkerMessage, ReshardReport>("reshardWorker", data, {
    heapMib,
    what: "the reshard",
    outOfMemoryAdvice: "run it again with a larger --heap-mib once its lock expires (the old layout is untouched until the switch)",
    onMessage: (message) => (message.type === "progress" ? onProgress(message.progress) : onPlan(message.shardedTables)),
  });
}

const BAR_WIDTH = 30;

/** One line redrawn in place on a terminal; a line at most every 500 ms otherwise. */
class ProgressBar {
  private readonly line: (text: string) => void;
  private drawn = false;
  private documentsRead = 0;
  /** No table has a shard key: every document stays on shard 0, and the other new shards are empty. */
  movesNothing = false;

  constructor(private readonly stream: NodeJS.WriteStream) {
    const throttledLine = throttled((text) => stream.write(`${text}\n`));
    this.line = stream.isTTY
      ? (text) => {
          stream.write(`\r${text.padEnd(100).slice(0, Math.max(20, (stream.columns ?? 100) - 1))}`);
          this.drawn = true;
        }
      : throttledLine;
  }

  /** What the worker found before it started: the tables that route by a shard key. */
  plan(shardedTables: readonly string[]): void {
    this.movesNothing = shardedTables.length === 0;
  }

  update(progress: ReshardProgress): void {
    // Nothing moves: no progress of the empty new shards, only of shard 0's copy.
    if (this.movesNothing && (progress.phase === "write" || progress.phase === "written") && progress.shard > 0) return;
    switch (progress.phase) {
      case "lock":
        this.event(`reshard: lock taken; writing layout generation ${progress.generation}`);
        if (this.movesNothing) this.event("reshard: no table of the app has a shard key: its documents stay on shard 0 and nothing of them moves between shards; the new shards start empty (but for jobs scheduled by mutations with shardBy, which follow their lane)");
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
