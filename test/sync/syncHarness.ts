import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { encodeMessage, parseServerMessage, type ClientMessage, type ServerMessage, type Version } from "../../src/sync/protocol.js";
import { runtimeBackend } from "../../src/sync/runtimeBackend.js";
import type { SessionTransport } from "../../src/sync/Session.js";
import type { SyncBackend } from "../../src/sync/SyncBackend.js";
import { SyncHandler, type SessionConnection, type SyncHandlerOptions } from "../../src/sync/SyncHandler.js";
import type { HarnessNode, ShardHarness } from "../support/shardHarness.js";
import * as syncApp from "./syncApp.js";

/**
 * A sync handler on a real writer (memory bucket, real SQLite, real runtime), with its
 * backend wrapped so tests can count and hold query runs, and clients that speak the
 * protocol through an in-memory transport whose "socket" can be paused.
 */
export interface SyncFixture {
  readonly handler: SyncHandler;
  readonly runtime: FunctionRuntime;
  readonly node: HarnessNode;
  /** Query runs per path so far. */
  readonly runs: Map<string, number>;
  /** While set, a query run whose path matches waits for the returned promise's release. */
  hold(path: string): { readonly reached: Promise<void>; release(): void };
  /** Makes the next mutation of `path` fail with this error (once). */
  failNextMutation(path: string, error: Error): void;
  client(options?: { paused?: boolean }): ModelClient;
}

export async function syncFixture(h: ShardHarness, options: Partial<SyncHandlerOptions> = {}): Promise<SyncFixture> {
  const node = await h.writer("writer");
  const app = App.fromModule(syncApp, "sync test app");
  const catalog = await resolveCatalog(h.bucket, app.schema, new SeededRandom(3));
  const runtime = new FunctionRuntime({ app, catalog, shard: node.engine });
  const inner = runtimeBackend(h.deploymentId, runtime, node.engine);
  const runs = new Map<string, number>();
  const holds = new Map<string, { reached: () => void; released: Promise<void> }>();
  const failures = new Map<string, Error>();
  const backend: SyncBackend = {
    deploymentId: inner.deploymentId,
    get readTs() {
      return inner.readTs;
    },
    runQuery: async (path, args, callOptions) => {
      runs.set(path, (runs.get(path) ?? 0) + 1);
      const held = holds.get(path);
      if (held !== undefined) {
        holds.delete(path);
        // Reads at the ts given now, finishes after the release: a run that overlaps commits.
        const run = inner.runQuery(path, args, callOptions);
        held.reached();
        await held.released;
        return run;
      }
      return inner.runQuery(path, args, callOptions);
    },
    runMutation: async (path, args, callOptions) => {
      const failure = failures.get(path);
      if (failure !== undefined) {
        failures.delete(path);
        throw failure;
      }
      return inner.runMutation(path, args, callOptions);
    },
    runAction: (path, args, callOptions) => inner.runAction(path, args, callOptions),
    receipt: (clientId, seq, identity) => inner.receipt(clientId, seq, identity),
  };
  const handler = new SyncHandler({ backend, ...options });
  node.engine.onSegmentApplied((segment) => handler.segmentApplied(segment));
  let clients = 0;
  return {
    handler,
    runtime,
    node,
    runs,
    hold(path) {
      let reached!: () => void;
      let release!: () => void;
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      holds.set(path, { reached, released: new Promise<void>((resolve) => (release = resolve)) });
      return { reached: reachedPromise, release };
    },
    failNextMutation(path, error) {
      failures.set(path, error);
    },
    client(clientOptions = {}) {
      return new ModelClient(handler, `session-${++clients}`, clientOptions.paused === true);
    },
  };
}

/**
 * A minimal protocol client for tests, independent of src/client: it validates every
 * server frame against the protocol schema, applies Transitions only on a matching
 * start version (recording any mismatch), and keeps each query's latest result.
 */
export class ModelClient implements SessionTransport {
  readonly frames: ServerMessage[] = [];
  readonly connection: SessionConnection;
  readonly results = new Map<number, { value?: unknown; error?: { code: string }; hash: string }>();
  version: Version = { querySet: 0, ts: 0 };
  readonly versionMismatches: { start: Version; held: Version }[] = [];
  closedWith: { code: number; reason: string } | null = null;
  terminated = false;
  private waiters: { predicate: (message: ServerMessage) => boolean; resolve: (message: ServerMessage) => void }[] = [];
  private pendingWrites: (() => void)[] = [];
  private nextQueryId = 1;
  private nextRequestId = 1;
  private unseen: ServerMessage[] = [];

  constructor(
    handler: SyncHandler,
    readonly sessionId: string,
    private paused: boolean,
  ) {
    this.connection = handler.connect(this);
  }

  // ---- SessionTransport (the server's side of the socket) ----
  send(text: string, written: (error?: Error) => void): void {
    const deliver = () => {
      this.deliver(text);
      written();
    };
    if (this.paused) this.pendingWrites.push(deliver);
    else queueMicrotask(deliver);
  }
  close(code: number, reason: string): void {
    this.closedWith = { code, reason };
  }
  terminate(): void {
    this.terminated = true;
  }

  /** A paused client reads nothing: the server's writes stay unacknowledged. */
  resume(): void {
    this.paused = false;
    const writes = this.pendingWrites;
    this.pendingWrites = [];
    for (const write of writes) write();
  }

  get unreadWrites(): number {
    return this.pendingWrites.length;
  }

  // ---- client side ----
  writeRaw(text: string): void {
    this.connection.receive(text);
  }
  write(message: ClientMessage): void {
    this.connection.receive(encodeMessage(message));
  }
  async connect(extra: Partial<Extract<ClientMessage, { type: "Connect" }>> = {}): Promise<Extract<ServerMessage, { type: "ConnectAck" }>> {
    this.write({ type: "Connect", sessionId: this.sessionId, ...extra });
    return (await this.next((message) => message.type === "ConnectAck")) as Extract<ServerMessage, { type: "ConnectAck" }>;
  }
  /** Sends Connect without waiting for its answer (a paused client cannot read it). */
  connectionPrime(): void {
    this.write({ type: "Connect", sessionId: this.sessionId });
  }
  /** Subscribes (one ModifyQuerySet) and waits for the Transition that answers it. */
  async subscribe(path: string, args: unknown, resultHash?: string): Promise<number> {
    const queryId = this.nextQueryId++;
    const base = this.version.querySet;
    this.write({ type: "ModifyQuerySet", baseVersion: base, newVersion: base + 1, add: [{ queryId, path, args, ...(resultHash ? { resultHash } : {}) }], remove: [] });
    await this.next((message) => message.type === "Transition" && message.endVersion.querySet === base + 1);
    return queryId;
  }
  async unsubscribe(queryId: number): Promise<void> {
    const base = this.version.querySet;
    this.write({ type: "ModifyQuerySet", baseVersion: base, newVersion: base + 1, add: [], remove: [queryId] });
    await this.next((message) => message.type === "Transition" && message.endVersion.querySet === base + 1);
  }
  /** Sends a mutation; resolves with its response. */
  async mutate(path: string, args: unknown, receipt?: { clientId: string; seq: number }): Promise<Extract<ServerMessage, { type: "MutationResponse" }>> {
    const requestId = this.nextRequestId++;
    this.write({ type: "Mutation", requestId, path, args, ...(receipt ?? {}) });
    return (await this.next((message) => message.type === "MutationResponse" && message.requestId === requestId)) as Extract<ServerMessage, { type: "MutationResponse" }>;
  }
  /** Resolves with the first frame (already received and not yet taken, or future) matching. */
  next(predicate: (message: ServerMessage) => boolean): Promise<ServerMessage> {
    const at = this.unseen.findIndex(predicate);
    if (at >= 0) return Promise.resolve(this.unseen.splice(at, 1)[0]!);
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }
  /** Waits until the client's version reaches ts (a Transition covering it was applied). */
  async reachTs(ts: number): Promise<void> {
    while (this.version.ts < ts) await this.next((message) => message.type === "Transition");
  }
  valueOf(queryId: number): unknown {
    return this.results.get(queryId)?.value;
  }

  private deliver(text: string): void {
    const message = parseServerMessage(text);
    this.frames.push(message);
    if (message.type === "Transition") this.apply(message);
    const at = this.waiters.findIndex((waiter) => waiter.predicate(message));
    if (at >= 0) this.waiters.splice(at, 1)[0]!.resolve(message);
    else this.unseen.push(message);
  }

  private apply(message: Extract<ServerMessage, { type: "Transition" }>): void {
    const { startVersion, endVersion } = message;
    if (startVersion.querySet !== this.version.querySet || startVersion.ts !== this.version.ts) {
      this.versionMismatches.push({ start: startVersion, held: this.version });
      return;
    }
    for (const modification of message.modifications) {
      if (modification.type === "QueryUpdated") this.results.set(modification.queryId, { value: modification.value, hash: modification.hash });
      else if (modification.type === "QueryFailed") this.results.set(modification.queryId, { error: modification.error, hash: modification.hash });
      else if (modification.type === "QueryRemoved") this.results.delete(modification.queryId);
      else if (modification.type === "QueryUnchanged") {
        const held = this.results.get(modification.queryId);
        this.results.set(modification.queryId, { ...(held ?? {}), hash: modification.hash });
      } else {
        throw new Error(`a QueryDiff came to a session that did not ask for diffs: ${JSON.stringify(modification)}`);
      }
    }
    this.version = endVersion;
  }
}
