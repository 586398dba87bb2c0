import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import type { CairnClient, QueryReference } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import { FRAME_WAIT_MS_MAX } from "./BenchSocket.js";

/** One subscription a fleet client holds; `label` names what its updates count towards ("hot", "c-0-0"). */
export interface FleetSubscription {
  readonly ref: QueryReference;
  readonly args: Record<string, unknown>;
  readonly label: string;
}

/** Clients opened (and subscribed) at once: enough to connect 1,000 in seconds, few enough not to flood the server's accept queue. */
export const FLEET_CONNECT_BATCH = 50;

interface Watch {
  readonly expected: number;
  remaining: number;
  lastAtMs: number;
  readonly resolve: (lastAtMs: number) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * Real client-library clients (createNodeClient) in this process, each holding some
 * subscriptions to counter queries whose results are numbers. A benchmark registers a
 * watch — "`count` subscriptions labelled L show value V" — before the commit that
 * causes it, and learns when the last of them saw it (performance.now(), ms, inside
 * the client's onUpdate).
 *
 * Any client error, and any reconnect, is counted: a figure measured while clients
 * reconnected is not the figure asked for, so `checkHealthy` fails the run.
 */
export class ClientFleet {
  readonly clients: CairnClient[] = [];
  private readonly watches = new Map<string, Watch>();
  private errors: unknown[] = [];
  private reconnects = 0;

  constructor(private readonly syncUrl: string) {}

  get size(): number {
    return this.clients.length;
  }

  /** Opens `count` more clients, FLEET_CONNECT_BATCH at a time, each subscribed to `subscriptionsOf(index)`; resolves once every subscription has its first value. */
  async connect(count: number, subscriptionsOf: (index: number) => readonly FleetSubscription[], onBatch?: (connected: number) => void): Promise<void> {
    const from = this.clients.length;
    for (let start = from; start < from + count; start += FLEET_CONNECT_BATCH) {
      const end = Math.min(from + count, start + FLEET_CONNECT_BATCH);
      const batch: Promise<void>[] = [];
      for (let index = start; index < end; index++) {
        const client = createNodeClient(this.syncUrl, { onError: (error) => this.errors.push(error) });
        client.onConnectionChange((state) => {
          if (state.state === "waitingToReconnect") this.reconnects++;
        });
        this.clients.push(client);
        batch.push(this.subscribeClient(index, subscriptionsOf(index)));
      }
      await Promise.all(batch);
      this.checkHealthy();
      onBatch?.(end - from);
    }
  }

  /** Adds `subscriptionsOf(index)` to every client, a batch of clients at a time; resolves once every one has its first value. */
  async subscribeEach(subscriptionsOf: (index: number) => readonly FleetSubscription[]): Promise<void> {
    for (let start = 0; start < this.clients.length; start += FLEET_CONNECT_BATCH) {
      const end = Math.min(this.clients.length, start + FLEET_CONNECT_BATCH);
      const batch: Promise<void>[] = [];
      for (let index = start; index < end; index++) batch.push(this.subscribeClient(index, subscriptionsOf(index)));
      await Promise.all(batch);
      this.checkHealthy();
    }
  }

  /**
   * Resolves with the time the `count`-th subscription labelled `label` showed
   * `expected`. Register it before the commit: updates before it are not counted.
   */
  watch(label: string, expected: number, count: number): Promise<number> {
    if (this.watches.has(label)) throw new CairnError("INTERNAL", `a watch on ${label} is already waiting`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const watch = this.watches.get(label);
        this.watches.delete(label);
        reject(new CairnError("TIMEOUT", `${watch?.remaining ?? "?"} of ${count} subscriptions to ${label} did not show ${expected} within ${FRAME_WAIT_MS_MAX} ms`));
      }, FRAME_WAIT_MS_MAX);
      this.watches.set(label, { expected, remaining: count, lastAtMs: 0, resolve, reject, timer });
    });
  }

  /** Throws if any client reported an error or reconnected. */
  checkHealthy(): void {
    if (this.errors.length > 0) throw new CairnError("INTERNAL", `${this.errors.length} client error(s), the first: ${String(this.errors[0])}`, { cause: this.errors[0] });
    if (this.reconnects > 0) throw new CairnError("INTERNAL", `${this.reconnects} client(s) lost their connection during the run`);
  }

  close(): void {
    for (const watch of this.watches.values()) {
      clearTimeout(watch.timer);
      watch.reject(new CairnError("CONNECTION_LOST", "the fleet was closed"));
    }
    this.watches.clear();
    for (const client of this.clients.splice(0)) client.close();
  }

  private subscribeClient(index: number, subscriptions: readonly FleetSubscription[]): Promise<void> {
    const client = this.clients[index]!;
    let waiting = subscriptions.length;
    return new Promise((resolve, reject) => {
      if (waiting === 0) return resolve();
      const timer = setTimeout(() => reject(new CairnError("TIMEOUT", `client ${index}: ${waiting} subscription(s) had no first value within ${FRAME_WAIT_MS_MAX} ms`)), FRAME_WAIT_MS_MAX);
      for (const { ref, args, label } of subscriptions) {
        let first = true;
        client.subscribe(ref, args, (value: unknown) => {
          if (first) {
            first = false;
            if (--waiting === 0) {
              clearTimeout(timer);
              resolve();
            }
          }
          this.updated(label, value);
        });
      }
    });
  }

  private updated(label: string, value: unknown): void {
    const watch = this.watches.get(label);
    if (watch === undefined || value !== watch.expected) return;
    watch.lastAtMs = performance.now();
    if (--watch.remaining > 0) return;
    clearTimeout(watch.timer);
    this.watches.delete(label);
    watch.resolve(watch.lastAtMs);
  }
}
