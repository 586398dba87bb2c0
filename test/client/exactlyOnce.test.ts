/**
 * Scenarios: the client library against a real writer node over a real socket.
 * - A mutation whose commit outcome the server cannot tell (the segment lands in the
 *   bucket but its response is lost, and reading it back fails: ENGINE_POISONED) is not
 *   rejected: the client re-sends the same (clientId, seq) until the node, writing again,
 *   answers it from its receipt; it resolves with its value and was applied once.
 * - A mutation too large for a frame fails at once with MESSAGE_TOO_LARGE, its optimistic
 *   update never shows, the connection is never dropped for it, and the client goes on
 *   working; a subscription too large fails at once the same way.
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MESSAGE_BYTES_MAX } from "../../src/base/limits.js";
import { functionReference } from "../../src/client/api.js";
import { CairnClient } from "../../src/client/CairnClient.js";
import type { ConnectionState } from "../../src/client/ConnectionLifecycle.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { parseClientMessage, type ClientMessage } from "../../src/sync/protocol.js";
import { startTestNode } from "../server/serverHarness.js";

const bump = functionReference<"mutation", { name: string }, number>("counters:bump");
const getCounter = functionReference<"query", { name: string }, number>("counters:get");
const addNote = functionReference<"mutation", { channel: string; body: string }, number>("notes:add");
const listNotes = functionReference<"query", { channel: string }, string[]>("notes:list");

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A node, and a client of it whose every sent frame is recorded. */
async function clientOfNode() {
  const started = await startTestNode();
  cleanups.push(() => started.close());
  const sent: ClientMessage[] = [];
  class RecordingWebSocket extends WebSocket {
    override send(data: unknown, ...rest: unknown[]): void {
      sent.push(parseClientMessage(String(data)));
      (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }
  const states: ConnectionState["state"][] = [];
  const errors: unknown[] = [];
  const client = new CairnClient(`${started.node.url.replace(/^http/, "ws")}api/sync`, {
    WebSocket: RecordingWebSocket as unknown as WebSocketConstructor,
    onError: (error) => errors.push(error),
  });
  client.onConnectionChange((state) => states.push(state.state));
  cleanups.push(() => client.close());
  return { started, client, sent, states, errors };
}

describe("the client, exactly once", () => {
  it("re-sends a mutation with an unknown outcome until its receipt answers, applying it once", async () => {
    const { started, client, sent } = await clientOfNode();
    expect(await client.query(getCounter, { name: "once" })).toBe(0);
    // The segment create lands but its answer is lost, and reading the slot back fails too.
    started.store.inject({ operations: ["create"], keyPattern: /\/log\//, once: true, effect: "lose-response" });
    started.store.inject({ operations: ["get"], keyPattern: /\/log\//, once: true, effect: "transient" });
    expect(await client.mutation(bump, { name: "once" })).toBe(1);
    expect(await client.query(getCounter, { name: "once" })).toBe(1);
    // It went out more than once, always as seq 1: the re-sends were answered from the receipt.
    const firstSends = sent.filter((frame) => frame.type === "Mutation" && frame.path === "counters:bump" && frame.seq === 1);
    expect(firstSends.length).toBeGreaterThan(1);
    expect(await client.mutation(bump, { name: "once" })).toBe(2);
  });

  it("fails a mutation too large for a frame at once, never shows its optimistic update, and stays usable", async () => {
    const { client, states } = await clientOfNode();
    const seen: string[][] = [];
    client.subscribe(listNotes, { channel: "big" }, (notes) => seen.push(notes));
    expect(await client.mutation(addNote, { channel: "big", body: "first" })).toBe(5);
    const statesBefore = states.length;
    // Multi-byte text: 6 MiB of characters, 18 MiB of UTF-8.
    const body = "€".repeat(6 * 1024 * 1024);
    const optimistic = client.mutation(addNote).withOptimisticUpdate((store, args) => {
      const current = store.getQuery(listNotes, { channel: "big" });
      if (current !== undefined) store.setQuery(listNotes, { channel: "big" }, [...current, args.body]);
    });
    await expect(optimistic({ channel: "big", body })).rejects.toMatchObject({ code: "MESSAGE_TOO_LARGE", details: { messageBytesMax: MESSAGE_BYTES_MAX } });
    expect(() => client.subscribe(listNotes, { channel: body }, () => {})).toThrow(expect.objectContaining({ code: "MESSAGE_TOO_LARGE" }));
    // The client goes on: the next mutation commits and shows, and the connection never dropped.
    expect(await client.mutation(addNote, { channel: "big", body: "second" })).toBe(6);
    expect(seen.at(-1)).toEqual(["first", "second"]);
    expect(seen.some((notes) => notes.some((note) => note.length > 100))).toBe(false);
    expect(states.slice(statesBefore)).toEqual([]);
  });
});
