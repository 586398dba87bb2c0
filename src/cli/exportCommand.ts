import { resolve } from "node:path";
import { systemClock } from "../base/index.js";
import { openObjectStore } from "../objectstore/index.js";
import { exportDeployment, type ExportProgress } from "../shard/index.js";
import { formatTs } from "./pointInTime.js";
import { throttled } from "./progressReporter.js";

export interface ExportCommandOptions {
  readonly store: string;
  /** The moment, as a ts (pointInTime.momentTs); default the logs' common frontier. */
  readonly at?: number;
  readonly to: string;
  readonly workDir?: string;
}

/**
 * `cairn export [--at <time>] --to <folder>`: the deployment's documents at one moment,
 * one JSON Lines file per table (shard/exportDeployment), with progress on stderr. The
 * source is only read, and may be live.
 */
export async function exportCommand(options: ExportCommandOptions): Promise<void> {
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const source = await openObjectStore(options.store);
  try {
    const report = await exportDeployment({
      source,
      to: options.to,
      clock: systemClock,
      onProgress: (step) => progress(describe(step)),
      ...(options.at !== undefined ? { atTs: options.at } : {}),
      ...(options.workDir !== undefined ? { workDirectory: resolve(options.workDir) } : {}),
    });
    process.stdout.write(`exported deployment ${report.deploymentId} as it was at ${formatTs(report.atTs)} into ${report.folder}: ${report.documents} document(s)\n`);
    for (const table of report.tables) process.stdout.write(`  ${table.name}: ${table.documents} document(s)\n`);
  } finally {
    await source.close();
  }
}

function describe(step: ExportProgress): string {
  switch (step.phase) {
    case "restore":
      return `shard ${step.shard}/${step.shards}: snapshot ${step.seqno}: part ${step.partsDone}/${step.parts}, ${step.documents}/${step.documentsTotal} documents`;
    case "replay":
      return `shard ${step.shard}/${step.shards}: replaying segment ${step.seqno}`;
    case "export":
      return `shard ${step.shard}/${step.shards}: ${step.documents} document(s) written`;
  }
}
