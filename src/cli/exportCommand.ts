import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CairnError } from "../base/index.js";
import type { ExportReport } from "../shard/index.js";
import { COMMAND_HEAP_MIB_DEFAULT, runCommandWorker } from "./commandWorker.js";
import type { HistoryProgressMessage } from "./historyWorker.js";
import { describeHistoryProgress } from "./historyProgress.js";
import { formatTs } from "./pointInTime.js";
import { throttled } from "./progressReporter.js";
import { isZipPath, zipFolder } from "./zipArchive.js";

export interface ExportCommandOptions {
  readonly store: string;
  /** The moment, as a ts (pointInTime.momentTs); default the logs' common frontier. */
  readonly at?: number;
  readonly to: string;
  readonly workDir?: string;
  readonly heapMib?: number;
}

/**
 * `cairn export [--at <time>] --to <folder | file.zip>`: the deployment's documents at one
 * moment, one JSON Lines file per table (shard/exportDeployment), with progress on stderr;
 * a `.zip` target gets that folder zipped (written beside it first, then removed). The
 * source is only read, and may be live. It runs in a worker thread with a capped heap
 * (commandWorker.ts).
 */
export async function exportCommand(options: ExportCommandOptions): Promise<void> {
  const progress = throttled((line) => process.stderr.write(`${line}\n`));
  const to = resolve(options.to);
  // A ZIP is the folder the export writes, zipped beside it: refused up front if it exists.
  const zip = isZipPath(to);
  if (zip && existsSync(to)) throw new CairnError("INVALID_ARGUMENT", `${to} exists: export into a new file; nothing was written`);
  const work = zip ? mkdtempSync(join(dirname(to), ".cairn-export-")) : null;
  try {
    await exportInto(options, work === null ? to : join(work, "export"), progress);
    if (work !== null) {
      progress(`writing ${to}…`);
      await zipFolder(join(work, "export"), to);
      process.stdout.write(`zipped into ${to}\n`);
    }
  } finally {
    if (work !== null) rmSync(work, { recursive: true, force: true });
  }
}

async function exportInto(options: ExportCommandOptions, folder: string, progress: (line: string) => void): Promise<void> {
  const report = await runCommandWorker<HistoryProgressMessage, ExportReport>(
    "historyWorker",
    {
      task: "export",
      storeUrl: options.store,
      toFolder: folder,
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
