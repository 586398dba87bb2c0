import WebSocket from "ws";
import { CairnError } from "../../src/base/errors.js";
import { FRAME_WAIT_MS_MAX } from "./BenchSocket.js";

/** process.memoryUsage() of the inspected process, in bytes. */
export interface InspectedMemory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

/**
 * A DevTools-protocol session to a process started with `--inspect` (ServeChild's
 * `inspectorUrl`), used only to collect its garbage before reading its memory, so that a
 * heap figure is what the process holds, not what it has yet to collect. Close it before
 * stopping the process: Node waits for an attached debugger to detach before exiting.
 */
export class InspectorSession {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
      if (reply.id === undefined) return;
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (reply.error !== undefined) waiter?.reject(new CairnError("INTERNAL", `inspector: ${reply.error.message}`));
      else waiter?.resolve(reply.result);
    });
    socket.on("close", () => {
      for (const waiter of this.pending.values()) waiter.reject(new CairnError("CONNECTION_LOST", "the inspector socket closed"));
      this.pending.clear();
    });
  }

  static async open(url: string): Promise<InspectorSession> {
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new InspectorSession(socket);
  }

  /** A full, synchronous GC in the inspected process. */
  async collectGarbage(): Promise<void> {
    await this.call("HeapProfiler.collectGarbage", {});
  }

  async memoryUsage(): Promise<InspectedMemory> {
    const result = (await this.call("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true })) as { result: { value: string } };
    return JSON.parse(result.result.value) as InspectedMemory;
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.close();
    });
  }

  private call(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CairnError("TIMEOUT", `inspector: no answer to ${method} within ${FRAME_WAIT_MS_MAX} ms`));
      }, FRAME_WAIT_MS_MAX);
      this.pending.set(id, {
        resolve: (result) => (clearTimeout(timer), resolve(result)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }
}
