import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import WebSocket from "ws";
import { CairnClient, type CairnClientOptions } from "../../src/client/CairnClient.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { parseClientMessage, type ClientMessage } from "../../src/sync/protocol.js";

/** What a test registers to undo after it (run in reverse order). */
export type Cleanups = (() => Promise<unknown> | unknown)[];

/** A client over `url` that records every frame it sends and every error it reports; closed by `cleanups`. */
export function openRecordingClient(url: string, options: Omit<CairnClientOptions, "WebSocket" | "onError">, cleanups: Cleanups) {
  const sent: ClientMessage[] = [];
  const errors: unknown[] = [];
  const sending: ((frame: ClientMessage) => void)[] = [];
  class RecordingWebSocket extends WebSocket {
    override send(data: unknown, ...rest: unknown[]): void {
      const frame = parseClientMessage(String(data));
      sent.push(frame);
      for (const listener of sending) listener(frame);
      (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }
  const client = new CairnClient(url, {
    reconnectBackoffBaseMs: 10,
    reconnectBackoffMaxMs: 50,
    ...options,
    WebSocket: RecordingWebSocket as unknown as WebSocketConstructor,
    onError: (error) => errors.push(error),
  });
  cleanups.push(() => client.close());
  return { client, sent, errors, onSend: (listener: (frame: ClientMessage) => void) => sending.push(listener) };
}

/** Resolves once `test` holds (polled: the client works on its own timers and sockets). */
export async function until(test: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let turn = 0; turn < 2_000; turn++) {
    if (await test()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}

/** The seqs of the mutations among `frames`, in the order sent (single and batched). */
export const mutationSeqs = (frames: readonly ClientMessage[]) =>
  frames.flatMap((frame) => (frame.type === "Mutation" ? [frame.seq] : frame.type === "MutationBatch" ? frame.entries.map((entry) => entry.seq) : []));

/** A client process (`script` in this folder, run by tsx with `url` and `outboxPath`), driven by lines on stdin and read line by line. */
export function startOutboxChild(script: string, url: string, outboxPath: string, directory: string, cleanups: Cleanups) {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, script), url, outboxPath], {
    cwd: process.cwd(),
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, TMPDIR: directory },
  });
  cleanups.push(() => child.kill("SIGKILL"));
  const seen: string[] = [];
  const waiters: { text: string; resolve: () => void }[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    seen.push(line);
    for (const waiter of waiters.filter((waiter) => waiter.text === line)) waiter.resolve();
  });
  return {
    process: child,
    send: (line: string) => child.stdin!.write(`${line}\n`),
    line: (text: string) => (seen.includes(text) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ text, resolve }))),
    kill: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
