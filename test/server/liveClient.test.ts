/**
 * Scenarios: the real client library (Node, over `ws`) against a real writer node. One
 * client's mutation reaches another's subscription, and resolves only once its own
 * subscription shows it; an optimistic update shows at once and is replaced by the
 * server's result. Then the server stops and a new one starts on the same directory and
 * port: the client reconnects by itself, a mutation made while the server was away is
 * sent once it is back and applied exactly once, and the subscription keeps updating.
 */
import { afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import type { functions } from "../sync/syncApp.js";
import { eventually } from "../support/Gate.js";
import { freePort } from "./serveProcess.js";
import { startTestNode } from "./serverHarness.js";

const api = apiOf<typeof functions>();
const clients: CairnClient[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function client(url: string): CairnClient {
  const made = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 200, onError: () => undefined });
  clients.push(made);
  return made;
}

/** The latest value a subscription delivered, as a getter. */
function follow<T>(subscribe: (onUpdate: (value: T) => void) => void): () => T | undefined {
  let latest: T | undefined;
  subscribe((value) => (latest = value));
  return () => latest;
}

describe("the client library against a live server", () => {
  it("delivers another client's write, and resolves a mutation once its own view shows it", async () => {
    const started = await startTestNode();
    cleanups.push(() => started.close());
    const reader = client(started.node.url);
    const writer = client(started.node.url);
    const readerNotes = follow<string[]>((onUpdate) => reader.subscribe(api.notes.list, { channel: "c" }, onUpdate));
    let writerNotes: string[] | undefined;
    writer.subscribe(api.notes.list, { channel: "c" }, (value) => (writerNotes = value));
    await eventually(() => readerNotes() !== undefined && writerNotes !== undefined);
    expect(await writer.mutation(api.notes.add, { channel: "c", body: "first" })).toBe(5);
    expect(writerNotes).toEqual(["first"]);
    await eventually(() => readerNotes()?.length === 1);
    expect(readerNotes()).toEqual(["first"]);
    expect(await reader.query(api.counters.get, { name: "none" })).toBe(0);
    await expect(writer.mutation(api.notes.fail, {})).rejects.toMatchObject({ code: "FUNCTION_FAILED" });
  });

  it("shows an optimistic update at once, then the server's result", async () => {
    const started = await startTestNode();
    cleanups.push(() => started.close());
    const viewer = client(started.node.url);
    const seen: number[] = [];
    viewer.subscribe(api.counters.get, { name: "likes" }, (value) => seen.push(value));
    await eventually(() => seen.length === 1);
    const bump = viewer.mutation(api.counters.bump).withOptimisticUpdate((store, { name }) => {
      store.setQuery(api.counters.get, { name }, (store.getQuery(api.counters.get, { name }) ?? 0) + 100);
    });
    const done = bump({ name: "likes" });
    expect(seen.at(-1)).toBe(100);
    expect(await done).toBe(1);
    expect(seen.at(-1)).toBe(1);
  });

  it("reconnects by itself to a restarted server and applies a mutation made meanwhile exactly once", async () => {
    const port = await freePort();
    let started = await startTestNode({ port }, { keepDirectory: true });
    const directory = started.directory;
    const user = client(started.node.url);
    const counter = follow<number>((onUpdate) => user.subscribe(api.counters.get, { name: "offline" }, onUpdate));
    await eventually(() => counter() === 0);
    await started.close();
    await eventually(() => user.connectionState.state !== "connected");
    const whileAway = user.mutation(api.counters.bump, { name: "offline" });
    started = await startTestNode({ port }, { directory });
    cleanups.push(() => started.close());
    expect(await whileAway).toBe(1);
    expect(user.connectionState.state).toBe("connected");
    expect(counter()).toBe(1);
    const other = client(started.node.url);
    await other.mutation(api.counters.bump, { name: "offline" });
    await eventually(() => counter() === 2);
    expect(await other.query(api.counters.get, { name: "offline" })).toBe(2);
  });
});
