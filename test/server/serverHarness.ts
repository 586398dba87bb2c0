import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { systemClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { App } from "../../src/functions/App.js";
import { FsObjectStore, type ObjectStore } from "../../src/objectstore/index.js";
import { startNode, type RunningNode, type NodeOptions } from "../../src/server/startNode.js";
import { encodeMessage, parseServerMessage, type ClientMessage, type ServerMessage } from "../../src/sync/protocol.js";
import * as syncApp from "../sync/syncApp.js";

/** A writer node in this process on a fresh directory bucket, listening on a free port. */
export async function startTestNode(
  overrides: Partial<NodeOptions> = {},
  reuse: { directory?: string; keepDirectory?: boolean } = {},
): Promise<{ node: RunningNode; directory: string; store: FaultyObjectStore; close(): Promise<void> }> {
  const directory = reuse.directory ?? mkdtempSync(join(tmpdir(), "cairn-server-"));
  // Faults only when a test injects them: a directory bucket otherwise.
  const store = new FaultyObjectStore(new FsObjectStore(join(directory, "bucket")), new SeededRandom(5), systemClock);
  const node = await startNode({ ...syncAppNodeOptions(store, join(directory, "local"), "test-node"), ...overrides });
  return {
    node,
    directory,
    store,
    async close() {
      await node.stop();
      await store.close();
      if (reuse.keepDirectory !== true) rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * A node of the sync test app named `name` in this process, over the directory bucket in
 * `directory` (several may share it), with its own local files. Its `stop` also closes its
 * store and may be called more than once.
 */
export async function startSyncAppNode(directory: string, name: string, overrides: Partial<NodeOptions> = {}): Promise<RunningNode> {
  const store = new FsObjectStore(join(directory, "bucket"));
  const started = await startNode({ ...syncAppNodeOptions(store, join(directory, `local-${name}`), name), ...overrides });
  const stopNode = started.stop;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await stopNode();
    await store.close();
  };
  return Object.assign(started, { stop });
}

/** A node of the sync test app on a free loopback port: no auth, no admin key, no web app, quiet. */
function syncAppNodeOptions(store: ObjectStore, localDirectory: string, nodeId: string): NodeOptions {
  return {
    store,
    localDirectory,
    app: App.fromModule(syncApp, "sync test app"),
    nodeId,
    port: 0,
    host: "127.0.0.1",
    adminKey: null,
    verifier: null,
    webApp: null,
    log: () => undefined,
  };
}

/** A raw protocol client over a real WebSocket: frames in order, validated against the schema. */
export class SocketClient {
  readonly frames: ServerMessage[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: { predicate: (message: ServerMessage) => boolean; resolve: (message: ServerMessage) => void }[] = [];
  private unseen: ServerMessage[] = [];
  private closeWaiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const message = parseServerMessage(data.toString());
      this.frames.push(message);
      const at = this.waiters.findIndex((waiter) => waiter.predicate(message));
      if (at >= 0) this.waiters.splice(at, 1)[0]!.resolve(message);
      else this.unseen.push(message);
    });
    socket.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const wake of this.closeWaiters) wake();
    });
  }

  static async open(url: string, options: WebSocket.ClientOptions = {}): Promise<SocketClient> {
    const socket = new WebSocket(`${url.replace(/^http/, "ws")}api/sync`, options);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new SocketClient(socket);
  }

  write(message: ClientMessage): void {
    this.socket.send(encodeMessage(message));
  }

  next(predicate: (message: ServerMessage) => boolean): Promise<ServerMessage> {
    const at = this.unseen.findIndex(predicate);
    if (at >= 0) return Promise.resolve(this.unseen.splice(at, 1)[0]!);
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }

  whenClosed(): Promise<void> {
    return this.closed !== null ? Promise.resolve() : new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  close(): void {
    this.socket.close();
  }
}
