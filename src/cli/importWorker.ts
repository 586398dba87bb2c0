import { parentPort, workerData } from "node:worker_threads";
import { failedMessage, type CommandWorkerEnd } from "./commandWorker.js";
import { runImport, type ImportCommandOptions, type ImportWorkerMessage } from "./importCommand.js";
import { throttled } from "./progressReporter.js";

/**
 * The thread `cairn import` runs in (commandWorker.ts explains why): runs the import and
 * posts its lines — the report for stdout, progress for stderr — then `done` or the error.
 */
const post = (message: ImportWorkerMessage | CommandWorkerEnd<null>) => parentPort!.postMessage(message);

try {
  await runImport(
    workerData as ImportCommandOptions,
    (line) => post({ type: "say", line }),
    throttled((line) => post({ type: "progress", line })),
  );
  post({ type: "done", report: null });
} catch (error) {
  post(failedMessage(error));
}
