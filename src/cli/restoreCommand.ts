import { resolve } from "node:path";
import { CairnError, systemClock, systemRandom } from "../base/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { restoreInPlace, restoreObjectStore, type RestoreToProgress } from "../shard/index.js";
import { refuseLiveNodes } from "./refuseLiveNodes.js";
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
}

/**
 * `cairn restore --at <time> --to <store URL>`: a new deployment at `--to` whose state is
 * the deployment's at that moment (shard/restoreObjectStore), with progress on stderr.
 * The source is only read, and may be live.
 */
export async function restoreCommand(options: RestoreCommandOptions): Promise<void> {
  if ((options.to === undefined) === (options.inPlace !== true)) {
    throw new CairnError("INVALID_ARGUMENT", "say where the restored state goes: --to <store URL> (a new deployment) or --in-place (this one), not both");
  }
  if (options.inPlace === true) return restoreHere(options);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const source = await openObjectStore(options.store);
  try {
    const target = await openObjectStore(options.to!);
    try {
      await assertConditionalWrites(target);
      const report = await restoreObjectStore({
        source,
        target,
        atTs: options.at,
        clock: systemClock,
        onProgress: (step) => progress(describe(step)),
        ...(options.workDir !== undefined ? { workDirectory: resolve(options.workDir) } : {}),
      });
      if (!report.restored) {
        say(`${target.description} already holds this restore (deployment ${report.deploymentId}); finished what the last run left`);
        return;
      }
      say(
        `restored deployment ${report.sourceDeploymentId} as it was at ${formatTs(report.atTs)} into ${target.description}: ` +
          `new deployment ${report.deploymentId}, ${report.numShards} shard(s), ${report.documents} document(s)`,
      );
      for (const [shard, restored] of report.shards.entries()) {
        const from = restored.baseSeqno === null ? "the log from its start" : `the snapshot at seqno ${restored.baseSeqno}`;
        say(`  shard ${shard}: ${restored.documents} document(s), from ${from} and ${restored.segmentsApplied} segment(s) after it`);
      }
      say(`serve it with: cairn serve --store ${options.to}`);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** `--in-place`: the state at the moment becomes the deployment's current one, the replaced layout kept for its retention. */
async function restoreHere(options: RestoreCommandOptions): Promise<void> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const store = await openObjectStore(options.store);
  try {
    await assertConditionalWrites(store);
    const report = await restoreInPlace({
      store,
      atTs: options.at,
      clock: systemClock,
      beforeLock: (from) => refuseLiveNodes(store, from, systemClock, systemRandom, "restoring in place"),
      onProgress: (step) => {
        if (step.phase === "lock" || step.phase === "switch" || step.phase === "cleanup") return;
        progress(step.phase === "written" ? `shard ${step.shard}/${step.shards}: written, ${step.documents} document(s)` : describe(step));
      },
      ...(options.workDir !== undefined ? { workDirectory: resolve(options.workDir) } : {}),
    });
    say(
      `restored deployment ${report.deploymentId} in place to ${formatTs(report.atTs)}: ${report.documents} document(s) on ${report.numShards} shard(s), ` +
        `now layout generation ${report.generation}`,
    );
    say(
      report.keptUntil === null
        ? `the replaced layout was deleted (retention 0)`
        : `the replaced layout is kept until ${new Date(report.keptUntil).toISOString()}: a restore to a moment before this one undoes it`,
    );
    if (report.cleanupError !== null) process.stderr.write(`cairn: warning: the restore is done, but deleting expired layouts stopped (${report.cleanupError})\n`);
  } finally {
    await store.close();
  }
}

function describe(step: RestoreToProgress): string {
  switch (step.phase) {
    case "cleanup":
      return `removing what an interrupted run left: ${step.objectsDeleted} object(s)`;
    case "restore":
      return `shard ${step.shard}/${step.shards}: snapshot ${step.seqno}: part ${step.partsDone}/${step.parts}, ${step.documents}/${step.documentsTotal} documents`;
    case "replay":
      return `shard ${step.shard}/${step.shards}: replaying segment ${step.seqno} (${new Date(Math.floor(step.ts / 1000)).toISOString()} of ${new Date(Math.floor(step.atTs / 1000)).toISOString()})`;
    case "write":
      return `shard ${step.shard}/${step.shards}: writing ${step.documents} document(s)`;
    case "written":
      return `shard ${step.shard}/${step.shards}: written, ${step.documents} document(s)`;
  }
}
