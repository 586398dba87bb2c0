import { Worker } from "node:worker_threads";
import { CairnError, type ErrorCode } from "../base/index.js";
import type { ServeOptions } from "./serveCommand.js";
import type { ServeWorkerMessage } from "./serveWorker.js";
import type { ServeStopMessage } from "./stopSignal.js";

/**
 * The node's JavaScript heap limit (`cairn serve --heap-mib`). V8 sizes its heap from how
 * much it may grow: under Node's default limit (~4 GiB here) it lets a node's old space
 * grow to several times its live data before collecting, so a writer holding ~100 MiB
 * live reached 750 MiB–1 GiB RSS under sustained apply. With the limit a few times the
 * live size it collects sooner: the node's heap stays near its live data. The live heap
 * is bounded by the overlay budget (OverlayBudget.ts: ≤ 200,000 unfolded rows, ~100 MiB
 * of small documents, per node) plus sessions and requests in flight, so 512 MiB leaves
 * room for both; a node that needs more says so (ERR_WORKER_OUT_OF_MEMORY) and is
 * restarted with a larger one.
 */
export const SERVE_HEAP_MIB_DEFAULT = 512;
/** Below this a node cannot even load its app and open its shards. */
export const SERVE_HEAP_MIB_MIN = 64;
/**
 * V8's young generation of the node's thread (its three semispaces), fixed rather than
 * V8's default, which grew from 48 MiB on Node 20 to 192 MiB on Node 24: the same heap
 * limit then means the same memory on every Node version. 48 MiB keeps Node 20's
 * scavenge rate.
 */
const SERVE_YOUNG_GENERATION_MIB = 48;

/**
 * Runs `cairn serve` in a worker thread whose heap is capped at `heapMib`, so that a
 * node's memory is bounded with Node's default flags (a process cannot change its own
 * main thread's heap limit once started; a worker's is set when it is created). The
 * process stays one process with one pid: this thread only forwards SIGINT and SIGTERM
 * to the node (which stops gracefully, stopSignal.ts) and reports how the node ended. A
 * node that ran out of its heap fails with a clear error naming --heap-mib.
 */
export async function serveInWorker(options: ServeOptions, heapMib: number): Promise<void> {
  const worker = new Worker(new URL("./workerThread.mjs", import.meta.url), { workerData: { module: "serveWorker", options }, resourceLimits: { maxOldGenerationSizeMb: heapMib, maxYoungGenerationSizeMb: SERVE_YOUNG_GENERATION_MIB } });
  const forward = (signal: NodeJS.Signals) => worker.postMessage({ type: "stop", signal } satisfies ServeStopMessage);
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  try {
    await new Promise<void>((resolve, reject) => {
      // Settled once the thread exited: by then everything it printed has reached this thread's stdout and stderr.
      let outcome: Error | "stopped" | null = null;
      worker.on("message", (message: ServeWorkerMessage) => {
        outcome =
          message.type === "stopped"
            ? "stopped"
            : new CairnError((message.code ?? "INTERNAL") as ErrorCode, message.message, { details: (message.details ?? {}) as Record<string, unknown> });
      });
      worker.on("error", (error: Error & { code?: string }) => {
        outcome =
          error.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? new CairnError("INTERNAL", `the node ran out of its ${heapMib} MiB JavaScript heap; restart it with a larger --heap-mib (its shards' writers fail over meanwhile)`)
            : error;
      });
      worker.on("exit", (code) => {
        if (outcome === "stopped") resolve();
        else reject(outcome ?? new CairnError("INTERNAL", `the node's worker thread exited with code ${code} before the node stopped`));
      });
    });
  } finally {
    process.off("SIGINT", forward);
    process.off("SIGTERM", forward);
  }
}
