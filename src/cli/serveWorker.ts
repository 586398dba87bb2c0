import { parentPort, workerData } from "node:worker_threads";
import { serveCommand, type ServeOptions } from "./serveCommand.js";

/**
 * The thread `cairn serve` runs the node in (serveInWorker.ts says why): runs
 * serveCommand, whose stop signal comes from the command's thread as a message
 * (stopSignal.ts), and posts how it ended. Its output goes to the process's own stdout
 * and stderr, as before.
 */
export type ServeWorkerMessage =
  | { readonly type: "stopped" }
  | { readonly type: "failed"; readonly code: string | null; readonly message: string; readonly details: unknown };

// Apps are bundled with inline source maps (loadApp): their stack traces name their own files and lines.
process.setSourceMapsEnabled(true);
const post = (message: ServeWorkerMessage) => parentPort!.postMessage(message);
try {
  await serveCommand((workerData as { readonly options: ServeOptions }).options);
  post({ type: "stopped" });
} catch (error) {
  const failure = error as { code?: unknown; details?: unknown };
  post({
    type: "failed",
    code: typeof failure.code === "string" ? failure.code : null,
    message: error instanceof Error ? error.message : String(error),
    details: cloneable(failure.details ?? {}),
  });
} finally {
  // The stop listener (stopSignal.ts) must not keep the thread alive once the node stopped.
  parentPort!.unref();
}

/** What of an error's details can cross to the command's thread (plain JSON), so that the error itself is what gets reported. */
function cloneable(details: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(details)) as unknown;
  } catch {
    return {};
  }
}
