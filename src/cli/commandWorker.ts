import { Worker } from "node:worker_threads";
import { CairnError, type ErrorCode } from "../base/index.js";

/**
 * Runs a long command (`cairn reshard`, `restore`, `export`) in a worker thread with a
 * capped JavaScript heap: its live heap is small (a snapshot part or two decoded), but V8
 * collects lazily under Node's default limits, and a capped heap is what bounds the
 * command's RSS whatever the store's size. The young generation is fixed small too (Node
 * 24's default is 4× Node 20's).
 *
 * The worker posts messages of its own kinds (progress, plans) and ends with `done` (the
 * report) or `failed` (a CairnError's code, message and details, rebuilt here).
 */
export type CommandWorkerEnd<Report> =
  | { readonly type: "done"; readonly report: Report }
  | { readonly type: "failed"; readonly code: string | null; readonly message: string; readonly details: unknown };

/** The modules workerThread.mjs may load. */
export type CommandWorkerModule = "reshardWorker" | "historyWorker" | "importWorker";

export const COMMAND_HEAP_MIB_DEFAULT = 192;
const COMMAND_YOUNG_GENERATION_MIB = 16;

export function runCommandWorker<Message extends { readonly type: string }, Report>(
  module: CommandWorkerModule,
  data: object,
  options: {
    readonly heapMib: number;
    /** "the reshard", "the restore": named when the worker runs out of heap. */
    readonly what: string;
    /** What to do after running out of heap (the command's own advice). */
    readonly outOfMemoryAdvice: string;
    readonly onMessage: (message: Message) => void;
  },
): Promise<Report> {
  const worker = new Worker(new URL("./workerThread.mjs", import.meta.url), {
    workerData: { module, ...data },
    resourceLimits: { maxOldGenerationSizeMb: options.heapMib, maxYoungGenerationSizeMb: COMMAND_YOUNG_GENERATION_MIB },
  });
  return new Promise((resolve, reject) => {
    let settled = false;
    worker.on("message", (message: Message | CommandWorkerEnd<Report>) => {
      if (message.type === "done") {
        settled = true;
        resolve((message as CommandWorkerEnd<Report> & { type: "done" }).report);
      } else if (message.type === "failed") {
        settled = true;
        const failed = message as CommandWorkerEnd<Report> & { type: "failed" };
        reject(new CairnError((failed.code ?? "INTERNAL") as ErrorCode, failed.message, { details: (failed.details ?? {}) as Record<string, unknown> }));
      } else {
        options.onMessage(message as Message);
      }
    });
    worker.on("error", (error: Error & { code?: string }) => {
      settled = true;
      reject(
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? new CairnError("INTERNAL", `${options.what} ran out of its ${options.heapMib} MiB heap; ${options.outOfMemoryAdvice}`)
          : error,
      );
    });
    worker.on("exit", (code) => {
      if (!settled) reject(new CairnError("INTERNAL", `${options.what}'s worker exited with code ${code} before it finished`));
    });
  });
}

/** In the worker: the `failed` message for an error thrown there. */
export function failedMessage(error: unknown): CommandWorkerEnd<never> {
  const { code, details } = error as { code?: string; details?: unknown };
  return { type: "failed", code: code ?? null, message: error instanceof Error ? error.message : String(error), details: details ?? null };
}
