import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { functionReference } from "../../src/client/api.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { createNodeClient } from "../../src/client/node.js";
import { encodeMessage, parseClientMessage, type ClientMessage, type ServerMessage, type Version } from "../../src/sync/protocol.js";

/**
 * Scenario: a real `ws` server plays a scripted Cairn server for one counter. The client
 * subscribes, sends a mutation the first connection never answers, and the server kills
 * that connection (terminate, no close handshake). The client must reconnect by itself
 * and rebuild its session on the second connection: its query with the hash of the
 * result it holds, and the unanswered mutation with the same (clientId, seq).
 */
const get = functionReference<"query", { name: string }, number>("counters:get");
const increment = functionReference<"mutation", { name: string }, number>("counters:increment");

interface Connection {
  readonly socket: WebSocket;
  readonly frames: ClientMessage[];
  version: Version;
}

/** A scripted server: answers Connect and ModifyQuerySet itself; mutations are answered by the test. */
class ScriptedServer {
  readonly connections: Connection[] = [];
  counter = 1;
  ts = 10;
  private waiters: { readonly test: () => boolean; readonly resolve: () => void }[] = [];

  constructor(readonly wss: WebSocketServer) {
    wss.on("connection", (socket) => {
      const connection: Connection = { socket, frames: [], version: { querySet: 0, ts: 0 } };
      this.connections.push(connection);
      socket.on("message", (data) => this.receive(connection, parseClientMessage(String(data))));
    });
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}`;
  }

  /** Resolves once `test` holds (checked after every frame received). */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  /** Commits the counter's increment on `connection` and answers like a Cairn server: response, then Transition. */
  commitMutation(connection: Connection, mutation: Extract<ClientMessage, { type: "Mutation" }>, queryId: number): void {
    this.counter += 1;
    this.ts += 1;
    this.send(connection, { type: "MutationResponse", requestId: mutation.requestId, success: true, value: this.counter, ts: this.ts });
    this.transition(connection, connection.version.querySet, [{ type: "QueryUpdated", queryId, value: this.counter, hash: this.hash() }]);
  }

  private receive(connection: Connection, frame: ClientMessage): void {
    connection.frames.push(frame);
    if (frame.type === "Connect") {
      this.send(connection, { type: "ConnectAck", deploymentId: "test", sessionId: frame.sessionId, known: [], results: [], ts: this.ts });
    } else if (frame.type === "ModifyQuerySet") {
      const modifications = frame.add.map((query) =>
        query.resultHash === this.hash()
          ? ({ type: "QueryUnchanged", queryId: query.queryId, hash: this.hash() } as const)
          : ({ type: "QueryUpdated", queryId: query.queryId, value: this.counter, hash: this.hash() } as const),
      );
      this.transition(connection, frame.newVersion, modifications);
    }
    this.waiters = this.waiters.filter((waiter) => (waiter.test() ? (waiter.resolve(), false) : true));
  }

  private transition(connection: Connection, querySet: number, modifications: Extract<ServerMessage, { type: "Transition" }>["modifications"]): void {
    const endVersion = { querySet, ts: this.ts };
    this.send(connection, { type: "Transition", startVersion: connection.version, endVersion, modifications });
    connection.version = endVersion;
  }

  private send(connection: Connection, message: ServerMessage): void {
    connection.socket.send(encodeMessage(message));
  }

  private hash(): string {
    return `hash-${this.counter}`;
  }
}

let server: ScriptedServer | null = null;
let client: CairnClient | null = null;

afterEach(async () => {
  client?.close();
  client = null;
  if (server !== null) {
    for (const socket of server.wss.clients) socket.terminate();
    server.wss.close();
    await once(server.wss, "close");
    server = null;
  }
});

async function startServer(): Promise<ScriptedServer> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await once(wss, "listening");
  return new ScriptedServer(wss);
}

describe("CairnClient over a real WebSocket", () => {
  it("reconnects after the server kills its socket and re-sends its query hashes and the unanswered mutation", async () => {
    server = await startServer();
    const scripted = server;
    const errors: unknown[] = [];
    client = createNodeClient(scripted.url, { reconnectBackoffBaseMs: 5, reconnectBackoffMaxMs: 20, onError: (error) => errors.push(error) });
    const states: string[] = [];
    client.onConnectionChange((state) => states.push(state.state));

    const seen: number[] = [];
    let firstValue!: () => void;
    const gotFirstValue = new Promise<void>((resolve) => (firstValue = resolve));
    client.subscribe(get, { name: "a" }, (value) => {
      seen.push(value);
      firstValue();
    });
    await gotFirstValue;
    expect(seen).toEqual([1]);

    const mutation = client.mutation(increment, { name: "a" });
    const first = scripted.connections[0]!;
    await scripted.until(() => first.frames.some((frame) => frame.type === "Mutation"));
    const original = first.frames.find((frame) => frame.type === "Mutation")!;
    first.socket.terminate();

    await scripted.until(() => (scripted.connections[1]?.frames.some((frame) => frame.type === "Mutation") ?? false));
    const second = scripted.connections[1]!;
    const [connect, resubscribe, resent] = second.frames;
    expect(connect).toMatchObject({ type: "Connect", clientId: client.clientId, held: [1], ackedThrough: 0, maxObservedTs: 10 });
    expect((first.frames[0] as { sessionId: string }).sessionId).not.toBe((connect as { sessionId: string }).sessionId);
    expect(resubscribe).toEqual({
      type: "ModifyQuerySet",
      baseVersion: 0,
      newVersion: 1,
      add: [{ queryId: 1, path: "counters:get", args: { name: "a" }, resultHash: "hash-1" }],
      remove: [],
    });
    expect(resent).toMatchObject({ type: "Mutation", path: "counters:increment", args: { name: "a" }, clientId: client.clientId, seq: 1 });
    expect(original).toMatchObject({ clientId: client.clientId, seq: 1 });

    scripted.commitMutation(second, resent as Extract<ClientMessage, { type: "Mutation" }>, 1);
    expect(await mutation).toBe(2);
    // The write is in the subscription by the time the promise resolves; QueryUnchanged re-sent nothing.
    expect(seen).toEqual([1, 2]);
    expect(states).toEqual(["connected", "waitingToReconnect", "connecting", "connected"]);
    expect(errors).toEqual([]);
  });
});
