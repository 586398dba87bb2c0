import { parentPort, workerData } from "node:worker_threads";
import { systemClock, systemRandom } from "../base/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { exportDeployment, restoreInPlace, restoreObjectStore } from "../shard/index.js";
import { failedMessage, type CommandWorkerEnd } from "./commandWorker.js";
import { refuseLiveNodes } from "./refuseLiveNodes.js";

/**
 * The thread `cairn restore` and `cairn export` run in (commandWorker.ts explains why):
 * opens the stores itself, runs the task, and posts progress, then the report or the
 * error, to the command's thread.
 */
export type HistoryTask =
  | { readonly task: "restore-to"; readonly storeUrl: string; readonly atTs: number; readonly toUrl: string; readonly workDirectory?: string }
  | { readonly task: "restore-in-place"; readonly storeUrl: string; readonly atTs: number; readonly workDirectory?: string }
  | { readonly task: "export"; readonly storeUrl: string; readonly atTs?: number; readonly toFolder: string; readonly workDirectory?: string };

export interface HistoryProgressMessage {
  readonly type: "progress";
  readonly progress: { readonly phase: string } & Record<string, unknown>;
}

const data = workerData as HistoryTask;
const post = (message: HistoryProgressMessage | CommandWorkerEnd<unknown>) => parentPort!.postMessage(message);
const onProgress = (progress: { readonly phase: string }) => post({ type: "progress", progress: progress as HistoryProgressMessage["progress"] });
const common = { clock: systemClock, random: systemRandom, onProgress, ...(data.workDirectory !== undefined ? { workDirectory: data.workDirectory } : {}) };

const store = await openObjectStore(data.storeUrl).catch((error: unknown) => {
  post(failedMessage(error));
  return null;
});
if (store !== null) {
  try {
    switch (data.task) {
      case "restore-to": {
        const target = await openObjectStore(data.toUrl);
        try {
          await assertConditionalWrites(target);
          post({ type: "done", report: await restoreObjectStore({ source: store, target, atTs: data.atTs, ...common }) });
        } finally {
          await target.close();
        }
        break;
      }
      case "restore-in-place":
        await assertConditionalWrites(store);
        post({
          type: "done",
          report: await restoreInPlace({ store, atTs: data.atTs, beforeLock: (from) => refuseLiveNodes(store, from, systemClock, systemRandom, "restoring in place"), ...common }),
        });
        break;
      case "export":
        post({ type: "done", report: await exportDeployment({ source: store, to: data.toFolder, ...(data.atTs !== undefined ? { atTs: data.atTs } : {}), ...common }) });
        break;
    }
  } catch (error) {
    post(failedMessage(error));
  } finally {
    await store.close();
  }
}
