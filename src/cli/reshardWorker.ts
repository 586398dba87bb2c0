import { parentPort, workerData } from "node:worker_threads";
import { systemClock, systemRandom } from "../base/index.js";
import { schemaCatalogObject } from "../manifest/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { reshardObjectStore } from "../shard/index.js";
import { failedMessage, type CommandWorkerEnd } from "./commandWorker.js";
import { refuseLiveNodes } from "./refuseLiveNodes.js";

/**
 * The thread `cairn reshard` runs the reshard in (reshardCommand.ts explains why): opens
 * the store itself, runs reshardObjectStore, and posts progress, then the report or the
 * error, to the command's thread.
 */
export interface ReshardWorkerData {
  readonly storeUrl: string;
  readonly toShards: number;
  readonly workDirectory?: string;
  readonly lockTtlMs?: number;
  /** Reshard although followers are registered live (they re-open on the new layout). */
  readonly allowLiveFollowers?: boolean;
}

export type ReshardWorkerMessage =
  /** Before the reshard: the tables that have a shard key (none: every document stays on shard 0). */
  | { readonly type: "plan"; readonly shardedTables: readonly string[] }
  | { readonly type: "progress"; readonly progress: import("../shard/index.js").ReshardProgress };

const data = workerData as ReshardWorkerData;
const post = (message: ReshardWorkerMessage | CommandWorkerEnd<import("../shard/index.js").ReshardReport>) => parentPort!.postMessage(message);

let store: Awaited<ReturnType<typeof openObjectStore>> | null = null;
try {
  store = await openObjectStore(data.storeUrl);
  await assertConditionalWrites(store);
  const catalog = (await schemaCatalogObject(store, systemRandom).read())?.value ?? null;
  // The app's tables: Cairn's own (routed by id: a scheduled job follows its mutation's lane) are few and not the question.
  post({ type: "plan", shardedTables: (catalog?.tables ?? []).filter((table) => table.shardKey !== null && !table.name.startsWith("_")).map((table) => table.name) });
  const report = await reshardObjectStore({
    store,
    toShards: data.toShards,
    clock: systemClock,
    random: systemRandom,
    ...(data.workDirectory !== undefined ? { workDirectory: data.workDirectory } : {}),
    ...(data.lockTtlMs !== undefined ? { lockTtlMs: data.lockTtlMs } : {}),
    onProgress: (progress) => post({ type: "progress", progress }),
    ...(data.allowLiveFollowers === true ? {} : { beforeLock: (from) => refuseLiveNodes(store!, from, systemClock, systemRandom) }),
  });
  post({ type: "done", report });
} catch (error) {
  post(failedMessage(error));
} finally {
  await store?.close();
}
