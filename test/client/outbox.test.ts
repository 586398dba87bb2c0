/**
 * Scenarios: a client with a file outbox against a real writer node, through a relay the
 * test breaks like a network. A "reload" is a new client over the same outbox file (and,
 * for a crash, a client process that is SIGKILLed).
 * - Mutations made while the node is unreachable are in the outbox before anything is
 *   sent; after a reload they go out (as a MutationBatch) under the outbox's client id
 *   and seqs, each applied once, shown as pending and restored until then; new
 *   mutations continue the numbering.
 * - Mutations the node applied whose acks were lost (the relay drops the node's frames),
 *   then the client process SIGKILLed: the next client's Connect holds their seqs, the
 *   node answers them from their receipts, and none is applied twice.
 * - A corrupted outbox (a flipped byte, a torn file, a well-formed record with seqs out
 *   of order) is reported as OUTBOX_INVALID naming where its text was kept, none of its
 *   mutations is sent, and the client goes on with a new outbox.
 * - A write of the outbox that fails is reported (OUTBOX_UNAVAILABLE) and nothing is
 *   sent until a retried write lands.
 * - A second client over an outbox another holds is told OUTBOX_LOCKED and runs without
 *   it, never numbering mutations under the holder's client id.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { functionReference } from "../../src/client/api.js";
import type { CairnClientOptions } from "../../src/client/CairnClient.js";
import { fileOutbox } from "../../src/client/node.js";
import { decodeOutboxRecord, encodeOutboxRecord } from "../../src/client/OutboxRecord.js";
import { startTestNode } from "../server/serverHarness.js";
import { mutationSeqs, openRecordingClient, startOutboxChild, until } from "./outboxHarness.js";
import { OutboxRelay } from "./outboxRelay.js";

const bump = functionReference<"mutation", { name: string }, number>("counters:bump");
const getCounter = functionReference<"query", { name: string }, number>("counters:get");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A node, a relay in front of it, a direct client to count with, and a directory for outboxes. */
async function setup() {
  const started = await startTestNode();
  cleanups.push(() => started.close());
  const nodeUrl = `${started.node.url.replace(/^http/, "ws")}api/sync`;
  const relay = await OutboxRelay.start(nodeUrl);
  cleanups.push(() => relay.close());
  const directory = mkdtempSync(join(tmpdir(), "cairn-outbox-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  const counter = open(nodeUrl);
  return { relay, nodeUrl, outboxPath: join(directory, "outbox"), directory, count: (name: string) => counter.client.query(getCounter, { name }) };
}

/** A client whose sent frames and reported errors are recorded; closed after the test. */
function open(url: string, options: Omit<CairnClientOptions, "WebSocket" | "onError"> = {}) {
  return openRecordingClient(url, options, cleanups);
}


describe("a client's file outbox", () => {
  it("sends mutations made while the node was unreachable once, after a reload, under the outbox's client id and seqs", async () => {
    const { relay, outboxPath, count } = await setup();
    relay.cut();
    const first = open(relay.url, { outbox: fileOutbox(outboxPath) });
    const made = [1, 2, 3].map(() => first.client.mutation(bump, { name: "offline" }).catch((error: unknown) => error));
    await until(() => first.client.pendingMutations().length === 3 && first.client.pendingMutations().every((mutation) => mutation.state === "sending"), "all three saved");
    const saved = decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test");
    expect(saved).toEqual({ clientId: first.client.clientId, nextSeq: 4, mutations: [1, 2, 3].map((seq) => ({ seq, path: "counters:bump", args: { name: "offline" }, issuedAs: { kind: "anonymous" } })) });
    await first.client.close();
    // Closing rejects the callers' promises; the mutations stay in the outbox.
    expect(await Promise.all(made)).toEqual([1, 2, 3].map(() => expect.objectContaining({ code: "CONNECTION_LOST" })));
    expect(existsSync(`${outboxPath}.lock`)).toBe(false);

    // The reload: a new client over the same file, the node reachable again.
    relay.restore();
    const second = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(() => second.client.pendingMutations().length === 3, "the outbox restored");
    expect(second.client.clientId).toBe(saved.clientId);
    expect(second.client.pendingMutations().map(({ seq, restored, args }) => ({ seq, restored, args }))).toEqual(
      [1, 2, 3].map((seq) => ({ seq, restored: true, args: { name: "offline" } })),
    );
    await until(() => second.client.pendingMutations().length === 0, "the restored mutations settled");
    expect(await count("offline")).toBe(3);
    const batch = second.sent.find((frame) => frame.type === "MutationBatch");
    expect(batch).toMatchObject({ entries: [1, 2, 3].map((seq) => ({ seq, clientId: saved.clientId, path: "counters:bump" })) });
    expect(second.errors).toEqual([]);
    // Nothing is left to send (the emptied outbox is deleted by a save that may still be on its way), and the next mutation continues the numbering.
    await until(() => !existsSync(outboxPath), "the emptied outbox deleted");
    expect(await second.client.mutation(bump, { name: "offline" })).toBe(4);
    expect(mutationSeqs(second.sent)).toEqual([1, 2, 3, 4]);
    expect(await count("offline")).toBe(4);
  });

  it("writes each mutation to the outbox before its frame is sent", async () => {
    const { relay, outboxPath, count } = await setup();
    const { client, onSend } = open(relay.url, { outbox: fileOutbox(outboxPath) });
    const heldWhenSent: boolean[] = [];
    onSend((frame) => {
      if (frame.type !== "Mutation") return;
      const record = decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test");
      heldWhenSent.push(record.clientId === frame.clientId && record.mutations.some((mutation) => mutation.seq === frame.seq));
    });
    await Promise.all([1, 2, 3, 4, 5].map(() => client.mutation(bump, { name: "durable" })));
    expect(heldWhenSent).toEqual([true, true, true, true, true]);
    expect(await count("durable")).toBe(5);
  });

  it("sends nothing the outbox could not write: reports OUTBOX_UNAVAILABLE once, and sends the mutation once a retried write lands", async () => {
    const { relay, outboxPath, count } = await setup();
    const { client, sent, errors } = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(() => sent.some((frame) => frame.type === "Connect"), "connected");
    // The temporary file's name is taken by a directory: every write fails until it goes.
    mkdirSync(`${outboxPath}.tmp`);
    const made = client.mutation(bump, { name: "unwritable" });
    await until(() => errors.length > 0, "the failed write reported");
    expect(errors).toEqual([expect.objectContaining({ code: "OUTBOX_UNAVAILABLE" })]);
    expect(client.pendingMutations()).toEqual([expect.objectContaining({ state: "saving" })]);
    expect(mutationSeqs(sent)).toEqual([]);
    rmSync(`${outboxPath}.tmp`, { recursive: true });
    expect(await made).toBe(1);
    expect(mutationSeqs(sent)).toEqual([1]);
    expect(await count("unwritable")).toBe(1);
  });

  it("applies mutations whose acks were lost before the client process was killed once, answering them from their receipts", async () => {
    const { relay, outboxPath, count, directory } = await setup();
    const child = startChild(relay.url, outboxPath, directory);
    await child.line("connected");
    relay.muteReplies();
    child.send("bump lost 3");
    await child.line("saved");
    // The node applied all three; the client heard nothing back.
    await until(async () => (await count("lost")) === 3, "the node applied the three mutations");
    child.process.kill("SIGKILL");
    await new Promise((resolve) => child.process.once("exit", resolve));
    expect(decodeOutboxRecord(readFileSync(outboxPath, "utf8"), "test").mutations.map((mutation) => mutation.seq)).toEqual([1, 2, 3]);

    relay.restore();
    const reloaded = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(() => reloaded.sent.some((frame) => frame.type === "Connect"), "the reloaded client connected");
    await until(() => reloaded.client.pendingMutations().length === 0 && reloaded.sent.length > 1, "the restored mutations settled");
    expect(reloaded.sent.find((frame) => frame.type === "Connect")).toMatchObject({ held: [1, 2, 3] });
    // The Connect's answer knew all three: none went out again, and none ran again.
    expect(mutationSeqs(reloaded.sent)).toEqual([]);
    expect(await count("lost")).toBe(3);
    expect(await reloaded.client.mutation(bump, { name: "lost" })).toBe(4);
    expect(mutationSeqs(reloaded.sent)).toEqual([4]);
    expect(reloaded.errors).toEqual([]);
  });

  it("re-sends mutations saved before the client process was killed while the node was unreachable, each once", async () => {
    const { relay, outboxPath, count, directory } = await setup();
    const child = startChild(relay.url, outboxPath, directory);
    await child.line("connected");
    relay.cut();
    child.send("bump crash 4");
    await child.line("saved");
    child.process.kill("SIGKILL");
    await new Promise((resolve) => child.process.once("exit", resolve));
    // The dead process's lock is taken over; its four mutations are sent once.
    relay.restore();
    const reloaded = open(relay.url, { outbox: fileOutbox(outboxPath) });
    await until(async () => (await count("crash")) === 4 && reloaded.client.pendingMutations().length === 0, "the four mutations applied");
    expect(mutationSeqs(reloaded.sent)).toEqual([1, 2, 3, 4]);
    expect(reloaded.errors).toEqual([]);
  });

  it("reports a corrupted outbox as OUTBOX_INVALID, keeps its text aside, sends none of it and starts a new outbox", async () => {
    const { relay, outboxPath, count } = await setup();
    const corruptions: [string, (text: string) => string][] = [
      // A flipped digit in a seq: the checksum no longer matches.
      ["a flipped byte", (text) => text.replace('"seq":2', '"seq":1')],
      ["a torn file", (text) => text.slice(0, Math.floor(text.length / 2))],
      [
        "seqs out of order under a valid checksum",
        (text) => {
          const record = decodeOutboxRecord(text, "test");
          return encodeOutboxRecord({ ...record, mutations: [...record.mutations].reverse() });
        },
      ],
    ];
    for (const [index, [what, corrupt]] of corruptions.entries()) {
      const name = `corrupt-${index}`;
      relay.cut();
      const writer = open(relay.url, { outbox: fileOutbox(outboxPath) });
      void writer.client.mutation(bump, { name }).catch(() => undefined);
      void writer.client.mutation(bump, { name }).catch(() => undefined);
      await until(() => writer.client.pendingMutations().filter((mutation) => mutation.state === "sending").length === 2, `two mutations saved (${what})`);
      await writer.client.close();
      const original = readFileSync(outboxPath, "utf8");
      const corrupted = corrupt(original);
      writeFileSync(outboxPath, corrupted);

      relay.restore();
      const reader = open(relay.url, { outbox: fileOutbox(outboxPath) });
      await until(() => reader.errors.length > 0, `the corruption reported (${what})`);
      const keptAt = `${outboxPath}.invalid-${index + 1}`;
      expect(reader.errors, what).toEqual([expect.objectContaining({ code: "OUTBOX_INVALID", kind: "Corruption", details: expect.objectContaining({ keptAt }) })]);
      expect(readFileSync(keptAt, "utf8")).toBe(corrupted);
      // The client goes on under a new id; nothing of the corrupted outbox was sent.
      expect(reader.client.clientId).not.toBe(decodeOutboxRecord(original, "test").clientId);
      expect(await reader.client.mutation(bump, { name })).toBe(1);
      expect(mutationSeqs(reader.sent)).toEqual([1]);
      expect(await count(name)).toBe(1);
      await reader.client.close();
    }
  });

  it("tells a second client over a held outbox OUTBOX_LOCKED; it runs without the outbox under its own id", async () => {
    const { relay, outboxPath, count } = await setup();
    const holder = open(relay.url, { outbox: fileOutbox(outboxPath) });
    expect(await holder.client.mutation(bump, { name: "shared" })).toBe(1);
    const second = open(relay.url, { outbox: fileOutbox(outboxPath) });
    expect(await second.client.mutation(bump, { name: "shared" })).toBe(2);
    expect(second.errors).toEqual([expect.objectContaining({ code: "OUTBOX_LOCKED", details: expect.objectContaining({ pid: process.pid }) })]);
    expect(second.client.clientId).not.toBe(holder.client.clientId);
    expect(await count("shared")).toBe(2);
  });
});

/** The client process of outboxChild.ts, with its stdout read line by line. */
function startChild(url: string, outboxPath: string, directory: string) {
  return startOutboxChild("outboxChild.ts", url, outboxPath, directory, cleanups);
}
