/**
 * Scenarios: the client library given the URLs of two real nodes in this process — a
 * writer and a replica over one directory bucket (the replica forwards writes with the
 * admin key) — over real sockets.
 * - The replica the client is on stops: the client moves to the writer, keeps its
 *   subscription (a later write by someone else reaches it), and a mutation made while
 *   it was between nodes is sent there and applied once.
 * - The client's socket dies while a mutation it sent through the replica is held in the
 *   writer's commit: on the writer the client re-sends it with the same (clientId, seq),
 *   and once the commit lands the bucket holds it exactly once.
 * - The client saw ts T on the writer; its socket dies and the next URL is a replica that
 *   cannot read the log past T: the replica refuses the session (REPLICA_BEHIND) rather
 *   than show an older state, the client moves back to the writer, and no result it
 *   delivered ever went back in time. Once the replica caught up, the client's next move
 *   lands there.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { systemClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { apiOf } from "../../src/client/api.js";
import { CairnClient } from "../../src/client/CairnClient.js";
import type { ConnectionState } from "../../src/client/ConnectionLifecycle.js";
import { createNodeClient } from "../../src/client/node.js";
import { cryptoRandom, type Random } from "../../src/client/Random.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { FsObjectStore } from "../../src/objectstore/index.js";
import type { NodeOptions, RunningNode } from "../../src/server/startNode.js";
import { parseClientMessage, type ClientMessage } from "../../src/sync/protocol.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { startSyncAppNode, startTestNode } from "../server/serverHarness.js";
import type { functions } from "../sync/syncApp.js";

const api = apiOf<typeof functions>();
const ADMIN_KEY = "several-urls-admin-key";
/** A replica that polls its log often and waits briefly for its frontier on Connect, so the scenarios take seconds. */
const FAST_REPLICA: Partial<NodeOptions> = {
  role: "replica",
  adminKey: ADMIN_KEY,
  tailer: { idlePollMs: 50, firstBackoffMs: 10, manifestRefreshMs: 200 },
  frontierWaitMs: 300,
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A writer and a replica over one fresh directory bucket; `replicaStore` replaces the replica's store (to inject faults into its reads). */
async function writerAndReplica(replicaStore?: (bucket: string) => FaultyObjectStore) {
  const directory = mkdtempSync(join(tmpdir(), "cairn-several-urls-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  const writer = await startTestNode({ adminKey: ADMIN_KEY }, { directory, keepDirectory: true });
  cleanups.push(() => writer.close());
  const store = replicaStore?.(join(directory, "bucket"));
  if (store !== undefined) cleanups.push(() => store.close());
  // A replica kept behind by its store also takes no hints: a hint would bring it the writer's segments.
  const replica = await startSyncAppNode(directory, "replica", { ...FAST_REPLICA, ...(store !== undefined ? { store, wakeHints: false } : {}) });
  cleanups.push(() => replica.stop());
  return { writer, replica, writerUrl: syncUrl(writer.node), replicaUrl: syncUrl(replica) };
}

function syncUrl(node: RunningNode): string {
  return `${node.url.replace(/^http/, "ws")}api/sync`;
}

/** Random whose first float picks URL `index` of `count` (the client's starting URL), then the platform's. */
function startingAt(index: number, count: number): Random {
  let first = true;
  return {
    bytes: (length) => cryptoRandom.bytes(length),
    float: () => {
      if (!first) return cryptoRandom.float();
      first = false;
      return (index + 0.5) / count;
    },
  };
}

/** `ws`'s WebSocket, remembering every socket it opened (so a test can kill the client's connection) and the frames sent on each. */
function trackedWebSocket(): { WebSocket: WebSocketConstructor; sockets: WebSocket[]; sent: Map<WebSocket, ClientMessage[]> } {
  const sockets: WebSocket[] = [];
  const sent = new Map<WebSocket, ClientMessage[]>();
  class Tracked extends WebSocket {
    constructor(url: string) {
      super(url);
      sockets.push(this);
      sent.set(this, []);
    }

    override send(data: unknown, ...rest: unknown[]): void {
      sent.get(this)!.push(parseClientMessage(String(data)));
      (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }
  return { WebSocket: Tracked as unknown as WebSocketConstructor, sockets, sent };
}

const QUICK_RECONNECTS = { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 200 } as const;

/** The notes of channel `channel` as `node` answers them over HTTP (its own state, not the client's). */
async function notesOn(node: RunningNode, channel: string): Promise<string[]> {
  const response = await fetch(new URL("api/query", node.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ path: "notes:list", args: { channel } }),
  });
  const body = (await response.json()) as { value?: string[]; error?: { code: string; message: string } };
  if (body.error !== undefined) throw new Error(`${body.error.code}: ${body.error.message}`);
  return body.value!;
}

async function addNoteOn(node: RunningNode, channel: string, body: string): Promise<void> {
  const response = await fetch(new URL("api/mutation", node.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ path: "notes:add", args: { channel, body } }),
  });
  if (!response.ok) throw new Error(`notes:add answered ${response.status}: ${await response.text()}`);
}

/** Polls until `predicate` holds; the deadline bounds a hang, it is no timing assertion. */
async function eventually(predicate: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString().slice(0, 200)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const isConnectedTo = (client: CairnClient, url: string) => () => client.connectionState.state === "connected" && client.connectionState.url === url;

function describeState(state: ConnectionState): string {
  return state.state === "closed" ? "closed" : `${state.state} ${state.url}`;
}

describe("a client of a writer and a replica", () => {
  it("moves to the writer when the replica it is on stops, keeping its subscription and a mutation made meanwhile, applied once", async () => {
    const { writer, replica, writerUrl, replicaUrl } = await writerAndReplica();
    // The Node entry, given both URLs; it starts on the replica (the second).
    const client = createNodeClient([writerUrl, replicaUrl], { ...QUICK_RECONNECTS, random: startingAt(1, 2), onError: () => undefined });
    cleanups.push(() => client.close());
    let live: string[] | undefined;
    client.subscribe(api.notes.list, { channel: "c" }, (notes) => (live = notes));
    expect(await client.mutation(api.notes.add, { channel: "c", body: "a" })).toBe(1);
    expect(client.connectionState).toEqual({ state: "connected", url: replicaUrl });
    expect(live).toEqual(["a"]);

    // The moment the replica's session ends, the client makes a mutation: it is pending across the move.
    let pending: Promise<number> | null = null;
    const states: string[] = [];
    client.onConnectionChange((state) => {
      states.push(describeState(state));
      if (state.state !== "connected" && pending === null) pending = client.mutation(api.notes.add, { channel: "c", body: "bb" });
    });
    await replica.stop();
    await eventually(isConnectedTo(client, writerUrl));
    expect(pending).not.toBeNull();
    expect(await pending!).toBe(2);
    expect(live).toEqual(["a", "bb"]);
    expect(states).toContain(`connected ${writerUrl}`);
    expect(states.every((state) => !state.startsWith("connected") || state === `connected ${writerUrl}`)).toBe(true);

    // Its subscription lives on the writer: someone else's write reaches it.
    await addNoteOn(writer.node, "c", "ccc");
    await eventually(() => JSON.stringify(live) === JSON.stringify(["a", "bb", "ccc"]));
    expect(await notesOn(writer.node, "c")).toEqual(["a", "bb", "ccc"]);
  });

  it("re-sends a mutation in flight when its socket died to the next node with the same (clientId, seq): applied once", async () => {
    const { writer, replica, writerUrl, replicaUrl } = await writerAndReplica();
    const { WebSocket, sockets, sent } = trackedWebSocket();
    const client = new CairnClient([writerUrl, replicaUrl], { WebSocket, ...QUICK_RECONNECTS, random: startingAt(1, 2), onError: () => undefined });
    cleanups.push(() => client.close());
    let live: string[] | undefined;
    client.subscribe(api.notes.list, { channel: "c" }, (notes) => (live = notes));
    expect(await client.mutation(api.notes.add, { channel: "c", body: "a" })).toBe(1);
    expect(client.connectionState).toEqual({ state: "connected", url: replicaUrl });

    // The writer's next segment create waits at a gate: the mutation forwarded to it cannot commit yet.
    let openGate!: () => void;
    writer.store.inject({ operations: ["create"], keyPattern: /\/log\//, once: true, effect: { until: new Promise<void>((resolve) => (openGate = resolve)) } });
    cleanups.push(() => openGate());
    const inFlight = client.mutation(api.notes.add, { channel: "c", body: "bb" });
    await eventually(() => writer.store.held === 1);
    // The client's connection to the replica dies (a network failure) with the mutation unanswered.
    const onReplica = sockets.at(-1)!;
    onReplica.terminate();
    await eventually(isConnectedTo(client, writerUrl));
    // The writer's session got the Connect holding its seq, then the mutation again under that seq.
    const onWriter = sent.get(sockets.at(-1)!)!;
    const sentOnReplica = sent.get(onReplica)!.find((frame) => frame.type === "Mutation" && frame.seq === 2);
    expect(sentOnReplica).toMatchObject({ clientId: client.clientId, args: { body: "bb" } });
    expect(onWriter[0]).toMatchObject({ type: "Connect", clientId: client.clientId, held: [2] });
    await eventually(() => onWriter.some((frame) => frame.type === "Mutation"));
    expect(onWriter.filter((frame) => frame.type === "Mutation")).toEqual([expect.objectContaining({ clientId: client.clientId, seq: 2, args: { channel: "c", body: "bb" } })]);
    openGate();
    expect(await inFlight).toBe(2);
    expect(live).toEqual(["a", "bb"]);
    expect(await notesOn(writer.node, "c")).toEqual(["a", "bb"]);
    await eventually(async () => (await notesOn(replica, "c")).length === 2);
    expect(await notesOn(replica, "c")).toEqual(["a", "bb"]);
  });

  it("is refused by a replica behind what it saw on the writer, moves back, and never shows an older result", async () => {
    let replicaStore!: FaultyObjectStore;
    const { writer, replica, writerUrl, replicaUrl } = await writerAndReplica(
      (bucket) => (replicaStore = new FaultyObjectStore(new FsObjectStore(bucket), new SeededRandom(3), systemClock)),
    );
    const { WebSocket, sockets } = trackedWebSocket();
    const errors: unknown[] = [];
    const client = new CairnClient([writerUrl, replicaUrl], { WebSocket, ...QUICK_RECONNECTS, random: startingAt(0, 2), onError: (error) => errors.push(error) });
    cleanups.push(() => client.close());
    const seen: string[][] = [];
    client.subscribe(api.notes.list, { channel: "c" }, (notes) => seen.push(notes));
    expect(await client.mutation(api.notes.add, { channel: "c", body: "a" })).toBe(1);
    await eventually(async () => (await notesOn(replica, "c")).length === 1);

    // From now on the replica cannot read the log: its frontier stays before "bb".
    replicaStore.inject({ operations: ["get"], keyPattern: /\/log\//, effect: "unreachable" });
    expect(await client.mutation(api.notes.add, { channel: "c", body: "bb" })).toBe(2);
    const states: string[] = [];
    client.onConnectionChange((state) => states.push(describeState(state)));
    sockets.at(-1)!.terminate();
    await eventually(() => states.includes(`connected ${writerUrl}`));
    expect(states.slice(0, 3)).toEqual([`waitingToReconnect ${replicaUrl}`, `connecting ${replicaUrl}`, `waitingToReconnect ${writerUrl}`]);
    expect(errors).toEqual([expect.objectContaining({ code: "REPLICA_BEHIND" })]);
    expect(await notesOn(replica, "c")).toEqual(["a"]);

    // Caught up, the replica takes the client at its next move, and shows what it saw.
    replicaStore.clear();
    await eventually(async () => (await notesOn(replica, "c")).length === 2);
    sockets.at(-1)!.terminate();
    await eventually(isConnectedTo(client, replicaUrl));
    expect(await client.mutation(api.notes.add, { channel: "c", body: "ccc" })).toBe(3);
    expect(await notesOn(writer.node, "c")).toEqual(["a", "bb", "ccc"]);
    // Every result it delivered held every note of the one before: never an older state.
    for (let at = 1; at < seen.length; at++) expect(seen[at]!.slice(0, seen[at - 1]!.length)).toEqual(seen[at - 1]);
    expect(seen.at(-1)).toEqual(["a", "bb", "ccc"]);
  });
});
