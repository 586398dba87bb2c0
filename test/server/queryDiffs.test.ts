/**
 * Scenario: incremental diffs and resume (issue 30), end to end on a real writer node
 * running test/functions/diffApp.ts.
 *
 * - Model-based, with the real client library (it announces diffs): random diffable
 *   subscriptions (documents by id, take in both orders, rank ranges, collect, by_id,
 *   first and pinned pages) and non-diffable controls; random commits (inserts, edits
 *   moving rows, deletions, writes elsewhere). After every commit each subscription's
 *   delivered value equals a fresh run over HTTP; the node sent QueryDiffs, and ran the
 *   queries far fewer times than commits × subscriptions.
 * - On the wire: a diffable result comes with its rows' order keys and the checksum as
 *   its hash; an insert into a 50-row page arrives as a QueryDiff of one add and one
 *   remove, whose checksum the client's arithmetic reproduces; ResetQuery sends the
 *   result whole; ResetQuery of an unknown query is a ProtocolError and the session goes
 *   on; a session that did not announce diffs never gets one.
 * - On a replica: a follower's session gets QueryDiffs for the writer's commits, from its tail.
 * - Resume: a client reconnecting with its last session's id, after commits that touched
 *   3 of its 22 subscriptions (documents and ranges), is answered QueryUnchanged for 19
 *   without a run and the 3 run; a claim from the future, a second claim, a claim under another identity and a
 *   claim with hashes the claimant does not hold all run every query.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import type { RunningNode } from "../../src/server/startNode.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import { addRow, checksumOf, emptySums, pageEnvelopeText } from "../../src/sync/resultChecksum.js";
import * as diffApp from "../functions/diffApp.js";
import { SocketClient, startSyncAppNode, startTestNode } from "./serverHarness.js";

const api = apiOf<typeof diffApp.functions>();
const app = App.fromModule(diffApp, "diff app");
const WAIT = { timeout: 20_000, interval: 20 } as const;
const GROUPS = ["g0", "g1", "g2"];
const ADMIN_KEY = "an-admin-key-for-the-resume-test";

type Transition = Extract<ServerMessage, { type: "Transition" }>;
type Modification = Transition["modifications"][number];

function client(url: string): CairnClient {
  return createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 200, onError: () => undefined });
}

async function fresh(node: RunningNode, path: string, args: unknown): Promise<unknown> {
  const response = await fetch(`${node.url}api/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  expect(response.status).toBe(200);
  return ((await response.json()) as { value: unknown }).value;
}

async function mutate(node: RunningNode, path: string, args: unknown): Promise<unknown> {
  const response = await fetch(`${node.url}api/mutation`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args }) });
  expect(response.status).toBe(200);
  return ((await response.json()) as { value: unknown }).value;
}

/** The next Transition carrying a modification of `queryId` (or any, without one). */
async function transitionOf(socket: SocketClient, queryId?: number): Promise<Transition> {
  return (await socket.next((message) => message.type === "Transition" && (queryId === undefined || message.modifications.some((m) => m.queryId === queryId))) as Transition);
}

/** Every run a subscription asked for (a shared run's hit or miss): see test/server/searchLive.test.ts. */
function subscriptionRuns(node: RunningNode): number {
  const { sharedRunHits, sharedRunMisses } = node.handler.stats();
  return sharedRunHits + sharedRunMisses;
}

function modificationOf(transition: Transition, queryId: number): Modification {
  return transition.modifications.find((modification) => modification.queryId === queryId)!;
}

describe("incremental query diffs against a real node", () => {
  it("keeps every subscription of the real client equal to a fresh run through random commits, by diffs (model-based)", async () => {
    const started = await startTestNode({ app });
    const node = started.node;
    const user = client(node.url);
    const random = new SeededRandom(11);
    const pick = <T>(items: readonly T[]): T => items[randomInt(random, items.length)]!;
    try {
      const newItem = () => ({ group: pick(GROUPS), rank: randomInt(random, 20), label: `l${randomInt(random, 4)}` });
      const live = new Set((await user.mutation(api.items.insert, { items: Array.from({ length: 30 }, newItem) })) as string[]);
      const subscriptions: { path: string; args: Record<string, unknown>; seen: unknown[] }[] = [];
      const subscribe = (path: string, args: Record<string, unknown>) => {
        const entry = { path, args, seen: [] as unknown[] };
        const [module, name] = path.split(":") as [string, string];
        user.subscribe((api as unknown as Record<string, Record<string, never>>)[module]![name]!, args as never, (value: unknown) => entry.seen.push(value));
        subscriptions.push(entry);
      };
      const ids = [...live];
      for (let i = 0; i < 4; i++) subscribe("items:get", { id: ids[i * 3]! });
      for (const group of GROUPS) {
        subscribe("items:ofGroup", { group, order: "asc", n: 4 });
        subscribe("items:ofGroup", { group, order: "desc", n: 6 });
        subscribe("items:allOfGroup", { group });
        subscribe("items:page", { group, order: "desc", paginationOpts: { cursor: null, numItems: 3 } });
        subscribe("items:labels", { group });
      }
      subscribe("items:ofRanks", { lo: 5, hi: 12, order: "asc", n: 5 });
      subscribe("items:byId", { order: "desc", n: 10 });
      const first = (await fresh(node, "items:page", { group: "g0", order: "asc", paginationOpts: { cursor: null, numItems: 2 } })) as { continueCursor: string };
      subscribe("items:page", { group: "g0", order: "asc", paginationOpts: { cursor: null, endCursor: first.continueCursor, numItems: 2 } });

      const converged = async () => {
        for (const subscription of subscriptions) {
          const expected = await fresh(node, subscription.path, subscription.args);
          await vi.waitFor(() => expect(subscription.seen.at(-1), `${subscription.path} ${JSON.stringify(subscription.args)}`).toEqual(expected), WAIT);
        }
      };
      await converged();
      const before = node.handler.stats();
      const steps = 40;
      for (let step = 0; step < steps; step++) {
        const ids = [...live];
        const choice = randomInt(random, 4);
        if (choice === 0) {
          for (const id of (await user.mutation(api.items.insert, { items: [newItem()] })) as string[]) live.add(id);
        } else if (choice === 1 && ids.length > 12) {
          const id = pick(ids);
          await user.mutation(api.items.remove, { ids: [id] as never });
          live.delete(id);
        } else if (choice === 2) {
          await user.mutation(api.items.note, { text: "elsewhere" });
        } else {
          const edit: Record<string, unknown> = { id: pick(ids) };
          if (randomInt(random, 2) === 0) edit["group"] = pick(GROUPS);
          if (randomInt(random, 2) === 0) edit["rank"] = randomInt(random, 20);
          edit["label"] = `l${randomInt(random, 4)}`;
          await user.mutation(api.items.change, { edits: [edit] as never });
        }
        await converged();
      }
      const after = node.handler.stats();
      const runs = after.sharedRunMisses - before.sharedRunMisses;
      expect(after.queryDiffs - before.queryDiffs).toBeGreaterThan(steps);
      // Every query re-run on every commit would be steps × subscriptions; diffs keep it a fraction.
      expect(runs).toBeLessThan((steps * subscriptions.length) / 3);
    } finally {
      await user.close();
      await started.close();
    }
  }, 120_000);

  it("sends row keys and a checksum with a diffable result, one add and one remove for an insert into a full page, and resets on request", async () => {
    const started = await startTestNode({ app });
    const node = started.node;
    const socket = await SocketClient.open(node.url);
    const plain = await SocketClient.open(node.url);
    try {
      await mutate(node, "items:insert", { items: Array.from({ length: 60 }, (_, rank) => ({ group: "g0", rank, label: "x" })) });
      socket.write({ type: "Connect", sessionId: "diffing", diffs: true });
      plain.write({ type: "Connect", sessionId: "plain" });
      await socket.next((message) => message.type === "ConnectAck");
      await plain.next((message) => message.type === "ConnectAck");
      const args = { group: "g0", order: "desc", n: 50 };
      socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:ofGroup", args }], remove: [] });
      plain.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:ofGroup", args }], remove: [] });
      const initial = modificationOf(await transitionOf(socket, 1), 1);
      await transitionOf(plain, 1);
      expect(initial.type).toBe("QueryUpdated");
      if (initial.type !== "QueryUpdated") return;
      expect(initial.rows?.shape).toBe("array");
      expect(initial.rows?.keys).toHaveLength(50);
      const rows = initial.value as Record<string, unknown>[];
      const keys = [...initial.rows!.keys];
      // The keys sort as the rows do (descending by rank), and the hash is the checksum of keys and texts.
      expect([...keys].sort().reverse()).toEqual(keys);
      const sums = emptySums();
      rows.forEach((row, at) => addRow(sums, keys[at]!, JSON.stringify(row), 1));
      expect(checksumOf(sums, "")).toBe(initial.hash);

      // A new top row: in as the first, the 50th out.
      await mutate(node, "items:insert", { items: [{ group: "g0", rank: 1000, label: "top" }] });
      const diff = modificationOf(await transitionOf(socket, 1), 1);
      expect(diff.type).toBe("QueryDiff");
      if (diff.type !== "QueryDiff") return;
      expect(diff.changes.map((change) => change.op).sort()).toEqual(["add", "remove"]);
      const added = diff.changes.find((change) => change.op === "add")!;
      const removed = diff.changes.find((change) => change.op === "remove")!;
      expect(removed.key).toBe(keys.at(-1));
      expect(added.key > keys[0]!).toBe(true);
      addRow(sums, removed.key, JSON.stringify(rows.at(-1)), -1);
      addRow(sums, added.key, JSON.stringify((added as { value: unknown }).value), 1);
      expect(checksumOf(sums, "")).toBe(diff.checksum);
      // The session without diffs got the whole result, as before.
      const whole = modificationOf(await transitionOf(plain, 1), 1);
      expect(whole.type).toBe("QueryUpdated");
      expect((whole as { rows?: unknown }).rows).toBeUndefined();
      expect(plain.frames.some((frame) => frame.type === "Transition" && frame.modifications.some((m) => m.type === "QueryDiff"))).toBe(false);

      socket.write({ type: "ResetQuery", queryId: 1 });
      const reset = modificationOf(await transitionOf(socket, 1), 1);
      expect(reset.type).toBe("QueryUpdated");
      expect((reset as { hash: string }).hash).toBe(diff.checksum);
      expect((reset as { value: unknown[] }).value).toEqual(await fresh(node, "items:ofGroup", args));

      socket.write({ type: "ResetQuery", queryId: 99 });
      const refused = await socket.next((message) => message.type === "ProtocolError");
      expect(refused).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
      await mutate(node, "items:insert", { items: [{ group: "g0", rank: 2000, label: "again" }] });
      expect(modificationOf(await transitionOf(socket, 1), 1).type).toBe("QueryDiff");
      expect(socket.closed).toBeNull();
    } finally {
      socket.close();
      plain.close();
      await started.close();
    }
  });

  it("answers a page's first and pinned forms with diffs that carry the new envelope", async () => {
    const started = await startTestNode({ app });
    const node = started.node;
    const socket = await SocketClient.open(node.url);
    try {
      await mutate(node, "items:insert", { items: Array.from({ length: 3 }, (_, rank) => ({ group: "g1", rank, label: "p" })) });
      socket.write({ type: "Connect", sessionId: "pages", diffs: true });
      await socket.next((message) => message.type === "ConnectAck");
      const args = { group: "g1", order: "asc", paginationOpts: { cursor: null, numItems: 5 } };
      socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:page", args }], remove: [] });
      const initial = modificationOf(await transitionOf(socket, 1), 1) as Extract<Modification, { type: "QueryUpdated" }>;
      expect(initial.rows?.shape).toBe("page");
      const page = initial.value as { page: unknown[]; isDone: boolean; continueCursor: string };
      expect(page.isDone).toBe(true);
      // Two more rows fill the page: it is no longer done, and its cursor is its last row's.
      await mutate(node, "items:insert", { items: [{ group: "g1", rank: 10, label: "p" }, { group: "g1", rank: 11, label: "p" }] });
      const diff = modificationOf(await transitionOf(socket, 1), 1) as Extract<Modification, { type: "QueryDiff" }>;
      expect(diff.type).toBe("QueryDiff");
      expect(diff.page?.isDone).toBe(false);
      expect(diff.page?.continueCursor).toBe(((await fresh(node, "items:page", args)) as { continueCursor: string }).continueCursor);
      expect(diff.checksum).toContain(".");
      expect(pageEnvelopeText(diff.page!.isDone, diff.page!.continueCursor)).toContain('"isDone":false');
    } finally {
      socket.close();
      await started.close();
    }
  });

  it("resumes a session: after commits touching 3 of 22 subscriptions, 19 are answered unchanged without a run; bad claims run everything", async () => {
    const started = await startTestNode({ app, adminKey: ADMIN_KEY });
    const node = started.node;
    const sockets: SocketClient[] = [];
    const open = async (sessionId: string, extra: Record<string, unknown> = {}) => {
      const socket = await SocketClient.open(node.url);
      sockets.push(socket);
      socket.write({ type: "Connect", sessionId, diffs: true, ...extra } as never);
      const ack = await socket.next((message) => message.type === "ConnectAck");
      return { socket, ts: (ack as { ts: number }).ts };
    };
    try {
      const ids = (await mutate(node, "items:insert", { items: Array.from({ length: 20 }, (_, rank) => ({ group: "g2", rank, label: "r" })) })) as string[];
      // 20 documents by id, and two ranges: one holding an edited document (21), one that nothing touches (22).
      const adds = [
        ...ids.map((id, at) => ({ queryId: at + 1, path: "items:get", args: { id } as Record<string, unknown> })),
        { queryId: 21, path: "items:ofGroup", args: { group: "g2", order: "asc", n: 5 } },
        { queryId: 22, path: "items:ofGroup", args: { group: "g5", order: "desc", n: 5 } },
      ];
      const { socket: first } = await open("first-session-0123456789");
      first.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: adds, remove: [] });
      const loaded = await transitionOf(first);
      const hashes = new Map(loaded.modifications.map((m) => [m.queryId, (m as { hash: string }).hash]));
      const sinceTs = loaded.endVersion.ts;
      first.close();
      await first.whenClosed();
      await vi.waitFor(() => expect(node.handler.stats().resumableSessions).toBe(1), WAIT);

      await mutate(node, "items:change", { edits: [{ id: ids[3], label: "changed" }, { id: ids[7], label: "changed" }] });
      await mutate(node, "items:note", { text: "unrelated" });
      const withHashes = adds.map((add) => ({ ...add, resultHash: hashes.get(add.queryId)! }));

      // A claim from the future takes nothing (and leaves the registration for the real client): every query runs
      // (its hashes still match, so the answers are QueryUnchanged, after a run each, as without resume).
      const before = node.handler.stats();
      const runsBefore = subscriptionRuns(node);
      const { socket: future } = await open("future-session", { resume: { sessionId: "first-session-0123456789", sinceTs: Number.MAX_SAFE_INTEGER } });
      future.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: withHashes, remove: [] });
      await transitionOf(future);
      expect(subscriptionRuns(node) - runsBefore).toBe(22);
      expect(node.handler.stats().resumedQueries).toBe(before.resumedQueries);
      future.close();
      await future.whenClosed();

      // The client, back with its session id and hashes: 18 unchanged without a run, 2 run.
      const runsBeforeResume = subscriptionRuns(node);
      const { socket: back } = await open("second-session", { resume: { sessionId: "first-session-0123456789", sinceTs } });
      back.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: withHashes, remove: [] });
      const resumed = await transitionOf(back);
      const unchanged = resumed.modifications.filter((m) => m.type === "QueryUnchanged").map((m) => m.queryId);
      const updated = resumed.modifications.filter((m) => m.type === "QueryUpdated").map((m) => m.queryId);
      expect(updated.sort((a, b) => a - b)).toEqual([4, 8, 21]);
      expect(unchanged).toHaveLength(19);
      expect(subscriptionRuns(node) - runsBeforeResume).toBe(3);
      expect(node.handler.stats().resumedQueries - before.resumedQueries).toBe(19);
      // Resumed subscriptions are live: a later edit of one reaches it as a diff.
      await mutate(node, "items:change", { edits: [{ id: ids[0], label: "later" }] });
      expect(modificationOf(await transitionOf(back, 1), 1).type).toBe("QueryDiff");

      // A second claim of the same session finds nothing; so does a claim of a session never seen.
      for (const claim of ["first-session-0123456789", "never-seen"]) {
        const runs = subscriptionRuns(node);
        const resumedBefore = node.handler.stats().resumedQueries;
        const { socket } = await open(`again-${claim}`, { resume: { sessionId: claim, sinceTs } });
        socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: withHashes, remove: [] });
        await transitionOf(socket);
        expect(subscriptionRuns(node) - runs).toBe(22);
        expect(node.handler.stats().resumedQueries).toBe(resumedBefore);
      }

      // Claims that must not be answered from the registration: hashes the claimant does not hold, another identity.
      back.close();
      await back.whenClosed();
      await vi.waitFor(() => expect(node.handler.stats().resumableSessions).toBeGreaterThan(0), WAIT);
      const { socket: guesser } = await open("guesser", { resume: { sessionId: "second-session", sinceTs: node.handler.currentTs } });
      guesser.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: adds.map((add) => ({ ...add, resultHash: "d0.0.0.0" })), remove: [] });
      const guessed = await transitionOf(guesser);
      expect(guessed.modifications.every((m) => m.type === "QueryUpdated")).toBe(true);
      expect(guessed.modifications).toHaveLength(22);
      // A registration made by an admin session, claimed by an anonymous one holding the same hashes: every query runs.
      const { socket: adminSession } = await open("admin-session");
      adminSession.write({ type: "AdminAuth", key: ADMIN_KEY });
      expect(await adminSession.next((message) => message.type === "AdminAuthResponse")).toMatchObject({ success: true });
      adminSession.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: adds, remove: [] });
      const adminLoaded = await transitionOf(adminSession);
      const adminHashes = new Map(adminLoaded.modifications.map((m) => [m.queryId, (m as { hash: string }).hash]));
      adminSession.close();
      await adminSession.whenClosed();
      await vi.waitFor(() => expect(node.handler.stats().resumableSessions).toBeGreaterThan(1), WAIT);
      const { socket: anonymous } = await open("anonymous-claim", { resume: { sessionId: "admin-session", sinceTs: adminLoaded.endVersion.ts } });
      anonymous.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: adds.map((add) => ({ ...add, resultHash: adminHashes.get(add.queryId)! })), remove: [] });
      const resumedBeforeClaim = node.handler.stats().resumedQueries;
      const runsBeforeClaim = subscriptionRuns(node);
      await transitionOf(anonymous);
      expect(node.handler.stats().resumedQueries).toBe(resumedBeforeClaim);
      expect(subscriptionRuns(node) - runsBeforeClaim).toBe(22);
    } finally {
      for (const socket of sockets) socket.close();
      await started.close();
    }
  });

  it("bounds a client flooding ResetQuery and refuses malformed diff and resume frames, while another client's diffs flow", async () => {
    const started = await startTestNode({ app });
    const node = started.node;
    const sockets: SocketClient[] = [];
    const open = async (sessionId: string) => {
      const socket = await SocketClient.open(node.url);
      sockets.push(socket);
      socket.write({ type: "Connect", sessionId, diffs: true });
      await socket.next((message) => message.type === "ConnectAck");
      return socket;
    };
    try {
      await mutate(node, "items:insert", { items: Array.from({ length: 20 }, (_, rank) => ({ group: "g0", rank, label: "f" })) });
      const args = { group: "g0", order: "desc", n: 10 };
      const calm = await open("calm");
      const hostile = await open("hostile");
      for (const socket of [calm, hostile]) socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:ofGroup", args }], remove: [] });
      await transitionOf(calm, 1);
      await transitionOf(hostile, 1);
      // 5,000 resets in one burst: the session works through what its inbound budget holds and is ended past it.
      const reset = JSON.stringify({ type: "ResetQuery", queryId: 1 });
      for (let i = 0; i < 5_000; i++) hostile.socket.send(reset);
      await mutate(node, "items:insert", { items: [{ group: "g0", rank: 500, label: "top" }] });
      expect(modificationOf(await transitionOf(calm, 1), 1).type).toBe("QueryDiff");
      await vi.waitFor(() => expect(hostile.closed !== null || hostile.frames.filter((frame) => frame.type === "Transition").length > 2).toBe(true), WAIT);

      // Malformed frames: a ProtocolError each, and the session goes on.
      for (const frame of [{ type: "ResetQuery", queryId: -1 }, { type: "ResetQuery", queryId: 1.5 }, { type: "ResetQuery" }, { type: "ResetQuery", queryId: 1, extra: true }]) {
        calm.socket.send(JSON.stringify(frame));
        expect(await calm.next((message) => message.type === "ProtocolError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
      }
      await mutate(node, "items:insert", { items: [{ group: "g0", rank: 600, label: "top" }] });
      expect(modificationOf(await transitionOf(calm, 1), 1).type).toBe("QueryDiff");
      // A malformed resume in Connect ends that connection before it opens.
      for (const resume of [{ sessionId: "", sinceTs: 1 }, { sessionId: "x", sinceTs: -1 }, { sessionId: "x" }, "x"]) {
        const socket = await SocketClient.open(node.url);
        sockets.push(socket);
        socket.socket.send(JSON.stringify({ type: "Connect", sessionId: "bad-resume", diffs: true, resume }));
        expect(await socket.next((message) => message.type === "FatalError")).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
      }
      expect(calm.closed).toBeNull();
    } finally {
      for (const socket of sockets) socket.close();
      await started.close();
    }
  });

  it("sends diffs from a replica's tail: a subscriber on a follower sees the writer's commits as QueryDiffs, equal to fresh runs", async () => {
    const directory = mkdtempSync(join(tmpdir(), "cairn-diff-replica-"));
    const writer = await startSyncAppNode(directory, "writer", { app });
    const follower = await startSyncAppNode(directory, "follower", { app, role: "replica" });
    const socket = await SocketClient.open(follower.url);
    try {
      await mutate(writer, "items:insert", { items: Array.from({ length: 8 }, (_, rank) => ({ group: "g0", rank, label: "r" })) });
      socket.write({ type: "Connect", sessionId: "on-replica", diffs: true, maxObservedTs: writer.handler.currentTs });
      await socket.next((message) => message.type === "ConnectAck");
      const args = { group: "g0", order: "desc", n: 5 };
      socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:ofGroup", args }], remove: [] });
      const initial = modificationOf(await transitionOf(socket, 1), 1) as Extract<Modification, { type: "QueryUpdated" }>;
      let keys = [...initial.rows!.keys];
      let rows = (initial.value as unknown[]).map((row) => JSON.stringify(row));
      for (const rank of [100, 6.5, 200]) {
        await mutate(writer, "items:insert", { items: [{ group: "g0", rank, label: "r" }] });
        const diff = modificationOf(await transitionOf(socket, 1), 1);
        expect(diff.type).toBe("QueryDiff");
        if (diff.type !== "QueryDiff") return;
        // Applied by key as a client would (descending order), the rows are a fresh run's, and add up to the checksum.
        const held = new Map(keys.map((key, at) => [key, rows[at]!]));
        for (const change of diff.changes) {
          if (change.op === "remove") held.delete(change.key);
          else held.set(change.key, JSON.stringify(change.value));
        }
        keys = [...held.keys()].sort().reverse();
        rows = keys.map((key) => held.get(key)!);
        const sums = emptySums();
        keys.forEach((key, at) => addRow(sums, key, rows[at]!, 1));
        expect(checksumOf(sums, "")).toBe(diff.checksum);
        expect(rows.map((row) => JSON.parse(row) as unknown)).toEqual(await fresh(writer, "items:ofGroup", args));
      }
      expect(follower.handler.stats().queryDiffs).toBeGreaterThanOrEqual(2);
    } finally {
      socket.close();
      await follower.stop();
      await writer.stop();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
