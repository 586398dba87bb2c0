import { resolve } from "node:path";
import { CairnError } from "../base/index.js";
import type { RestoreInPlaceReport, RestoreReport } from "../shard/index.js";
import { COMMAND_HEAP_MIB_DEFAULT, runCommandWorker } from "./commandWorker.js";
import type { HistoryProgressMessage, HistoryTask } from "./historyWorker.js";
import { describeHistoryProgress } from "./historyProgress.js";
import { formatTs } from "./pointInTime.js";
import { throttled } from "./progressReporter.js";

export interface RestoreCommandOptions {
  readonly store: string;
  /** The moment, as a ts (pointInTime.momentTs). */
  readonly at: number;
  /** A new deployment there… */
  readonly to?: string;
  /** …or this one, as a new layout (exactly one of the two). */
  readonly inPlace?: boolean;
  readonly workDir?: string;
  readonly heapMib?: number;
}

/**
 * `cairn restore --at <time> (--to <store URL> | --in-place)`: the deployment's state at a
 * past moment as a new deployment (shard/restoreObjectStore; the source is only read and
 * may be live) or as this deployment's current state (shard/restoreInPlace; nodes
 * stopped), with progress on stderr. It runs in a worker thread with a capped heap
 * (commandWorker.ts), which bounds its memory whatever the store's size.
 */
export async function restoreCommand(options: RestoreCommandOptions): Promise<void> {
  if ((options.to === undefined) === (options.inPlace !== true)) {
    throw new CairnError("INVALID_ARGUMENT", "say where the restored state goes: --to <store URL> (a new deployment) or --in-place (this one), not both");
  }
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const workDirectory = options.workDir !== undefined ? { workDirectory: resolve(options.workDir) } : {};
  const task: HistoryTask =
    options.inPlace === true
      ? { task: "restore-in-place", storeUrl: options.store, atTs: options.at, ...workDirectory }
      : { task: "restore-to", storeUrl: options.store, atTs: options.at, toUrl: options.to!, ...workDirectory };
  const report = await runCommandWorker<HistoryProgressMessage, RestoreReport | RestoreInPlaceReport>("historyWorker", task, {
    heapMib: options.heapMib ?? COMMAND_HEAP_MIB_DEFAULT,
    what: "the restore",
    outOfMemoryAdvice: "run it again with a larger --heap-mib (a restore into a new deployment starts over; one in place left the deployment untouched)",
    onMessage: (message) => {
      const line = describeHistoryProgress(message.progress);
      if (line !== null) progress(line);
    },
  });
  if (task.task === "restore-in-place") {
    const done = report as RestoreInPlaceReport;
    say(`restored deployment ${done.deploymentId} in place to ${formatTs(done.atTs)}: ${done.documents} document(s) on ${done.numShards} shard(s), now layout generation ${done.generation}`);
    say(
      done.keptUntil === null
        ? `the replaced layout was deleted (retention 0)`
        : `the replaced layout is kept until ${new Date(done.keptUntil).toISOString()}: a restore to a moment before this one undoes it`,
    );
    if (done.cleanupError !== null) process.stderr.write(`cairn: warning: the restore is done, but deleting expired layouts stopped (${done.cleanupError})\n`);
    return;
  }
  const done = report as RestoreReport;
  if (!done.restored) {
    say(`${options.to} already holds this restore (deployment ${done.deploymentId}); finished what the last run left`);
    return;
  }
  say(
    `restored deployment ${done.sourceDeploymentId} as it was at ${formatTs(done.atTs)} into ${options.to}: ` +
      `new deployment ${done.deploymentId}, ${done.numShards} shard(s), ${done.documents} document(s)`,
  );
  for (const [shard, restored] of done.shards.entries()) {
    const from = restored.baseSeqno === null ? "the log from its start" : `the snapshot at seqno ${restored.baseSeqno}`;
    say(`  shard ${shard}: ${restored.documents} document(s), from ${from} and ${restored.segmentsApplied} segment(s) after it`);
  }
  say(`serve it with: cairn serve --store ${options.to}`);
}
