import { resolve } from "node:path";
import type { ExportReport } from "../shard/index.js";
import { COMMAND_HEAP_MIB_DEFAULT, runCommandWorker } from "./commandWorker.js";
import type { HistoryProgressMessage } from "./historyWorker.js";
import { describeHistoryProgress } from "./historyProgress.js";
import { formatTs } from "./pointInTime.js";
import { throttled } from "./progressReporter.js";

export interface ExportCommandOptions {
  readonly store: string;
  /** The moment, as a ts (pointInTime.momentTs); default the logs' common frontier. */
  readonly at?: number;
  readonly to: string;
  readonly workDir?: string;
  readonly heapMib?: number;
}

/**
 * `cairn export [--at <time>] --to <folder>`: the deployment's documents at one moment,
 * one JSON Lines file per table (shard/exportDeployment), with progress on stderr. The
 * source is only read, and may be live. It runs in a worker thread with a capped heap
 * (commandWorker.ts).
 */
export async function exportCommand(options: ExportCommandOptions): Promise<void> {
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const report = await runCommandWorker<HistoryProgressMessage, ExportReport>(
    "historyWorker",
    {
      task: "export",
      storeUrl: options.store,
      toFolder: resolve(options.to),
      ...(options.at !== undefined ? { atTs: options.at } : {}),
      ...(options.workDir !== undefined ? { workDirectory: resolve(options.workDir) } : {}),
    },
    {
      heapMib: options.heapMib ?? COMMAND_HEAP_MIB_DEFAULT,
      what: "the export",
      outOfMemoryAdvice: "run it again with a larger --heap-mib (nothing was left behind)",
      onMessage: (message) => {
        const line = describeHistoryProgress(message.progress);
        if (line !== null) progress(line);
      },
    },
  );
  process.stdout.write(`exported deployment ${report.deploymentId} as it was at ${formatTs(report.atTs)} into ${report.folder}: ${report.documents} document(s)\n`);
  for (const table of report.tables) process.stdout.write(`  ${table.name}: ${table.documents} document(s)\n`);
}
