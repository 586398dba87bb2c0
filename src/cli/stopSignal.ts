import { isMainThread, parentPort } from "node:worker_threads";

/** A signal the process received, as `cairn serve`'s main thread forwards it to the node's thread (serveInWorker.ts). */
export interface ServeStopMessage {
  readonly type: "stop";
  readonly signal: NodeJS.Signals;
}

/**
 * Resolves with the first SIGINT or SIGTERM; the handlers are installed when this is
 * called and stay for the life of the process (in a worker thread, which no signal
 * reaches, the ServeStopMessages its parent forwards): a second signal while the node
 * stops (Ctrl-C reaches both npm and the server, and npm forwards it once more; a
 * supervisor may repeat its SIGTERM) must not kill it midway, before its leases are
 * handed over.
 * SIGKILL remains the way to stop it at once.
 */
export function stopSignal(say: (line: string) => void): Promise<NodeJS.Signals> {
  return new Promise<NodeJS.Signals>((done) => {
    let received: NodeJS.Signals | null = null;
    const stop = (signal: NodeJS.Signals) => {
      if (received !== null) {
        say(`${signal}: already stopping (since ${received}); SIGKILL stops at once, without handing the leases over`);
        return;
      }
      received = signal;
      done(signal);
    };
    if (isMainThread) {
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
      return;
    }
    parentPort!.on("message", (message: ServeStopMessage) => {
      if (message.type === "stop") stop(message.signal);
    });
  });
}
