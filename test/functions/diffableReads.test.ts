/**
 * Diffable reads (issue 30, item 1), model-based: a subscription's result kept current
 * from the documents commits write (DiffableResult.advance) must equal a fresh run of the
 * query at every step — value and read ranges alike — or advance must decline (null) and
 * the query runs again.
 *
 * - Random subscriptions over the app in test/functions/diffApp.ts: documents by id,
 *   take in both orders over an equality and over a rank range, collect, the by_id index,
 *   first pages and pinned pages (each page's cursors from a real run).
 * - Random commits: inserts, edits moving rows within, into and out of groups and ranges,
 *   deletions, writes to another table, several writes per commit; advanced one commit
 *   at a time and, sometimes, several commits at once.
 * - Across 3 shards: every shard's revisions in ts order, ranges on one shard (by channel)
 *   and merged across shards (by n), pages and documents.
 * - The changes advance reports, applied by key to the rows before, give the rows after.
 * - The proof (ResultGuard): a handler that looks at its rows, filters them, wraps them,
 *   reads twice, changes them after returning or reads ctx.now() is never diffable, nor is
 *   a null result; one that clones its rows is answered as a plain call.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import type { DiffableResult, DiffRow, RowChange } from "../../src/functions/DiffableRead.js";
import type { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import type { DocumentRevision, KeyRange } from "../../src/model/index.js";
import { encodeValue, type Value } from "../../src/model/index.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { runtimeOn } from "../support/functionsHarness.js";
import { harnessPerTest } from "../support/shardHarness.js";
import * as diffApp from "./diffApp.js";
import { FIELDS, randomDiffApp, VALUES } from "./randomDiffApp.js";
import * as shardedDiffApp from "./shardedDiffApp.js";
import { App } from "../../src/functions/App.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { shardedRuntime } from "../support/shardedRuntime.js";

const harness = harnessPerTest(memoryBucket);

interface Fixture {
  readonly runtime: FunctionRuntime;
  /** Every revision the writer applied, in ts order. */
  readonly revisions: DocumentRevision[];
  readonly mutate: (path: string, args: Record<string, unknown>) => Promise<Value>;
}

async function fixture(module: unknown = diffApp): Promise<Fixture> {
  const h = await harness();
  const node = await h.writer("a");
  const revisions: DocumentRevision[] = [];
  let appliedTs = 0;
  node.engine.onSegmentApplied((segment) => {
    revisions.push(...segment.records.revisions);
    appliedTs = Math.max(appliedTs, segment.header.maxTs);
  });
  const runtime = await runtimeOn(h, node, module);
  const mutate = async (path: string, args: Record<string, unknown>) => {
    const run = await runtime.runMutation(path, args);
    // The applied-segment event may come a turn after the acknowledgement.
    for (let turn = 0; appliedTs < run.ts && turn < 1000; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(appliedTs).toBeGreaterThanOrEqual(run.ts);
    return run.value;
  };
  return { runtime, revisions, mutate };
}

interface Subscription {
  readonly path: string;
  readonly args: Record<string, unknown>;
  state: DiffableResult | null;
  readTs: number;
}

const GROUPS = ["g0", "g1", "g2", "g3"];

/** Arguments as text for messages (bigints included). */
function shown(args: unknown): string {
  return JSON.stringify(args, (_, value: unknown) => (typeof value === "bigint" ? `${value}n` : value));
}

function rangeKey(range: KeyRange): string {
  return `${range.keyspace}|${Buffer.from(range.start).toString("hex")}|${range.end === null ? "∞" : Buffer.from(range.end).toString("hex")}`;
}

function rangesOf(ranges: readonly KeyRange[]): string[] {
  return [...new Set(ranges.map(rangeKey))].sort();
}

/** The rows after `changes`, applied by key to `before` as a client would. */
function applied(before: readonly DiffRow[], changes: readonly RowChange[], order: "asc" | "desc"): { key: string; text: string }[] {
  const rows = new Map(before.map((row) => [Buffer.from(row.key).toString("hex"), row.text]));
  for (const change of changes) {
    if (change.op === "remove") expect(rows.delete(Buffer.from(change.before.key).toString("hex"))).toBe(true);
    else if (change.op === "edit") {
      const key = Buffer.from(change.after.key).toString("hex");
      expect(rows.has(key)).toBe(true);
      rows.set(key, change.after.text);
    } else {
      const key = Buffer.from(change.after.key).toString("hex");
      expect(rows.has(key)).toBe(false);
      rows.set(key, change.after.text);
    }
  }
  const sorted = [...rows].map(([key, text]) => ({ key, text })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return order === "asc" ? sorted : sorted.reverse();
}

describe("diffable reads", () => {
  it("keeps every diffable subscription equal to a fresh run, through random commits (model-based)", async () => {
    for (const seed of [1, 2, 3]) await randomRun(seed);
  }, 120_000);

  it("keeps them equal through random schemas: any-typed fields, random indexes and equality prefixes (model-based)", async () => {
    const total = { diffs: 0, changed: 0, declined: 0 };
    for (const seed of [21, 22, 23, 24]) {
      const counts = await randomSchemaRun(seed);
      total.diffs += counts.diffs;
      total.changed += counts.changed;
      total.declined += counts.declined;
    }
    expect(total.changed).toBeGreaterThan(100);
    expect(total.diffs).toBeGreaterThan(total.declined);
  }, 180_000);

  it("holds across shards: every shard's revisions, ranges on one shard and merged across shards (model-based)", async () => {
    const bucket = await memoryBucket.open();
    const sharded = await ShardedStore.open({ store: bucket.store, localDirectory: ":memory:", nodeId: "w", numShards: 3, random: new SeededRandom(1) });
    try {
      await sharded.acquireAll();
      const revisions: DocumentRevision[] = [];
      for (const engine of sharded.engines) engine.onSegmentApplied((segment) => revisions.push(...segment.records.revisions));
      const runtime = await shardedRuntime(sharded, bucket.store, App.fromModule(shardedDiffApp, "sharded diff app"));
      const random = new SeededRandom(31);
      const pick = <T>(items: readonly T[]): T => items[randomInt(random, items.length)]!;
      const channels = Array.from({ length: 9 }, (_, i) => `c${i}`);
      const live = new Map<string, string>();
      const send = async () => {
        const channel = pick(channels);
        live.set((await runtime.runMutation("messages:send", { channel, n: randomInt(random, 60), body: "b" })).value as string, channel);
      };
      for (let i = 0; i < 40; i++) await send();
      const subscriptions: Subscription[] = [];
      const subscribe = async (path: string, args: Record<string, unknown>) => {
        const run = await runtime.runQueryRecorded(path, args, { describe: true });
        expect(run.outcome.kind).toBe("ok");
        subscriptions.push({ path, args, state: run.diffable ?? null, readTs: run.readTs });
      };
      for (const channel of channels.slice(0, 4)) await subscribe("messages:inChannel", { channel, order: pick(["asc", "desc"] as const), n: 3 });
      await subscribe("messages:byN", { order: "asc", n: 5 });
      await subscribe("messages:byN", { order: "desc", n: 12 });
      await subscribe("messages:all", {});
      await subscribe("messages:page", { paginationOpts: { cursor: null, numItems: 6 } });
      for (const id of [...live.keys()].slice(0, 3)) await subscribe("messages:get", { id });
      expect(subscriptions.every((subscription) => subscription.state !== null)).toBe(true);
      const counts = { diffs: 0, changed: 0, declined: 0 };
      for (let step = 0; step < 40; step++) {
        for (let c = 1 + randomInt(random, 3); c > 0; c--) {
          const [id, channel] = pick([...live]);
          const choice = randomInt(random, 4);
          if (choice === 0 || live.size < 20) await send();
          else if (choice === 1) {
            await runtime.runMutation("messages:remove", { channel, id });
            live.delete(id);
          } else await runtime.runMutation("messages:edit", { channel, id, ...(choice === 2 ? { n: randomInt(random, 60) } : { body: `e${step}` }) });
        }
        // Let every shard's frontier pass the commits, so fresh runs read them all.
        for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
        await checkSubscriptions(runtime, revisions, subscriptions, "sharded", counts);
      }
      expect(counts.changed).toBeGreaterThan(40);
    } finally {
      await sharded.close();
      await bucket.close();
    }
  }, 120_000);

  it("never calls a result diffable when the handler looked at it, filtered, wrapped, read twice, changed it later or read the clock", async () => {
    const { runtime, mutate } = await fixture();
    const ids = (await mutate("items:insert", { items: [1, 2, 3, 4].map((rank) => ({ group: "g0", rank, label: `l${rank}` })) })) as string[];
    const describe = { describe: true };
    for (const path of ["items:labels", "items:someOrNone", "items:twoReads", "items:filtered", "items:wrapped", "items:mutatedLater", "items:first", "items:recentOnly"]) {
      const run = await runtime.runQueryRecorded(path, { group: "g0" }, describe);
      expect(run.outcome.kind, path).toBe("ok");
      expect(run.diffable, path).toBeNull();
    }
    // mutatedLater's pop ran as its read resolved, before the runtime took the value: the result has 3 rows, and no diff claims 4.
    const later = await runtime.runQueryRecorded("items:mutatedLater", { group: "g0" }, describe);
    expect((later.outcome as { value: unknown[] }).value).toHaveLength(3);
    const missing = await runtime.runQueryRecorded("items:get", { id: ids[0] }, describe);
    expect(missing.diffable).not.toBeNull();
    await mutate("items:remove", { ids: [ids[0]] });
    const gone = await runtime.runQueryRecorded("items:get", { id: ids[0] }, describe);
    expect(gone.diffable).toBeNull();
    // A handler that clones its rows (structuredClone refuses a proxy) is answered as a plain call is.
    const cloned = await runtime.runQueryRecorded("items:cloned", { group: "g0" }, describe);
    expect(cloned.outcome).toEqual((await runtime.runQueryRecorded("items:cloned", { group: "g0" })).outcome);
    expect(cloned.diffable).toBeNull();
    // The same diffable queries, without describe: no diffable result, no proxies.
    const plain = await runtime.runQueryRecorded("items:ofGroup", { group: "g0", order: "asc", n: 2 });
    expect(plain.diffable).toBeUndefined();
  });
});

async function randomRun(seed: number): Promise<void> {
  const random = new SeededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[randomInt(random, items.length)]!;
  const { runtime, revisions, mutate } = await fixture();
  const live = new Set<string>();
  const newItem = () => ({ group: pick(GROUPS), rank: randomInt(random, 30), label: `l${randomInt(random, 5)}` });
  for (const id of (await mutate("items:insert", { items: Array.from({ length: 24 }, newItem) })) as string[]) live.add(id);

  const subscriptions: Subscription[] = [];
  const subscribe = async (path: string, args: Record<string, unknown>) => {
    const run = await runtime.runQueryRecorded(path, args, { describe: true });
    expect(run.outcome.kind).toBe("ok");
    subscriptions.push({ path, args, state: run.diffable ?? null, readTs: run.readTs });
    return run;
  };
  for (let i = 0; i < 30; i++) {
    const order = pick(["asc", "desc"] as const);
    switch (randomInt(random, 7)) {
      case 0:
        await subscribe("items:get", { id: pick([...live]) });
        break;
      case 1:
        await subscribe("items:ofGroup", { group: pick(GROUPS), order, n: pick([1, 2, 3, 5, 8]) });
        break;
      case 2: {
        const lo = randomInt(random, 25);
        await subscribe("items:ofRanks", { lo, hi: lo + 1 + randomInt(random, 10), order, n: pick([1, 3, 6]) });
        break;
      }
      case 3:
        await subscribe("items:allOfGroup", { group: pick(GROUPS) });
        break;
      case 4:
        await subscribe("items:byId", { order, n: pick([2, 5, 40]) });
        break;
      case 5:
        await subscribe("items:page", { group: pick(GROUPS), order, paginationOpts: { cursor: null, numItems: pick([1, 2, 4]) } });
        break;
      default: {
        // Pinned pages as usePaginatedQuery holds them: [start, end of the first page], then the next.
        const group = pick(GROUPS);
        const numItems = pick([1, 2, 3]);
        const first = await runtime.runQuery("items:page", { group, order, paginationOpts: { cursor: null, numItems } });
        const firstCursor = (first.value as { continueCursor: string }).continueCursor;
        await subscribe("items:page", { group, order, paginationOpts: { cursor: null, endCursor: firstCursor, numItems } });
        const second = await runtime.runQuery("items:page", { group, order, paginationOpts: { cursor: firstCursor, numItems } });
        const secondCursor = (second.value as { continueCursor: string }).continueCursor;
        await subscribe("items:page", { group, order, paginationOpts: { cursor: firstCursor, endCursor: secondCursor, numItems } });
      }
    }
  }
  expect(subscriptions.filter((s) => s.state !== null).length).toBeGreaterThan(20);

  const counts = { diffs: 0, changed: 0, declined: 0 };
  for (let step = 0; step < 60; step++) {
    const commits = 1 + (randomInt(random, 4) === 0 ? randomInt(random, 3) : 0);
    for (let c = 0; c < commits; c++) {
      const ids = [...live];
      switch (randomInt(random, 5)) {
        case 0:
          for (const id of (await mutate("items:insert", { items: Array.from({ length: 1 + randomInt(random, 3) }, newItem) })) as string[]) live.add(id);
          break;
        case 1:
        case 2: {
          const edits = Array.from({ length: 1 + randomInt(random, 3) }, () => {
            const edit: Record<string, unknown> = { id: pick(ids) };
            if (randomInt(random, 2) === 0) edit["group"] = pick(GROUPS);
            if (randomInt(random, 2) === 0) edit["rank"] = randomInt(random, 30);
            if (randomInt(random, 2) === 0) edit["label"] = `l${randomInt(random, 5)}`;
            return edit;
          });
          const seen = new Set<unknown>();
          await mutate("items:change", { edits: edits.filter((edit) => !seen.has(edit["id"]) && seen.add(edit["id"])) });
          break;
        }
        case 3: {
          if (ids.length < 8) break;
          const gone = [...new Set([pick(ids), pick(ids)])];
          await mutate("items:remove", { ids: gone });
          for (const id of gone) live.delete(id);
          break;
        }
        default:
          await mutate("items:note", { text: "elsewhere" });
      }
    }
    await checkSubscriptions(runtime, revisions, subscriptions, `seed ${seed}`, counts);
  }
  // The model must exercise both paths: diffs that changed rows, and declines that re-ran.
  expect(counts.changed).toBeGreaterThan(100);
  expect(counts.diffs).toBeGreaterThan(counts.declined);
  expect(counts.declined).toBeGreaterThan(0);
}

interface Counts {
  diffs: number;
  changed: number;
  declined: number;
}

/**
 * After commits: each subscription's state advanced over the revisions since its ts must
 * equal a fresh run (value, read ranges, and the rows its changes make), or decline; a
 * declined or non-diffable one takes the fresh run's state.
 */
async function checkSubscriptions(runtime: FunctionRuntime, revisions: readonly DocumentRevision[], subscriptions: readonly Subscription[], label: string, counts: Counts): Promise<void> {
  for (const subscription of subscriptions) {
    const fresh = await runtime.runQueryRecorded(subscription.path, subscription.args, { describe: true });
    expect(fresh.outcome.kind, `${subscription.path} ${shown(subscription.args)}: ${String((fresh.outcome as { error?: unknown }).error)}`).toBe("ok");
    const state = subscription.state;
    if (state !== null) {
      // In ts order, as the sync handler announces them (shards apply theirs independently).
      const window = revisions.filter((revision) => revision.ts > subscription.readTs && revision.ts <= fresh.readTs).sort((a, b) => a.ts - b.ts);
      const step = state.advance(window);
      if (step === null) {
        counts.declined++;
      } else {
        counts.diffs++;
        if (step.changes.length > 0) counts.changed++;
        const what = `${subscription.path} ${shown(subscription.args)} (${label})`;
        expect(JSON.parse(step.next.valueText()), what).toEqual(encodeValue((fresh.outcome as { value: Value }).value));
        expect(rangesOf(step.next.readRanges()), what).toEqual(rangesOf(fresh.readRanges));
        const rows = applied(state.rows, step.changes, state.order);
        expect(rows, what).toEqual(step.next.rows.map((row) => ({ key: Buffer.from(row.key).toString("hex"), text: row.text })));
        expect(fresh.diffable?.valueText(), what).toBe(step.next.valueText());
        subscription.state = step.next;
        subscription.readTs = fresh.readTs;
        continue;
      }
    }
    subscription.state = fresh.diffable ?? null;
    subscription.readTs = fresh.readTs;
  }
}

/** The same model over a random schema (randomDiffApp): any-typed fields, random indexes, random equality prefixes. */
async function randomSchemaRun(seed: number): Promise<Counts> {
  const random = new SeededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[randomInt(random, items.length)]!;
  const { module, indexes } = randomDiffApp(random);
  const { runtime, revisions, mutate } = await fixture(module);
  const tables = [...new Set(indexes.map((index) => index.table))];
  const live = new Map<string, string>();
  const fields = () => {
    const document: Record<string, Value> = {};
    for (const field of FIELDS) if (randomInt(random, 5) > 0) document[field] = pick(VALUES);
    return document;
  };
  const insert = () => {
    const table = pick(tables);
    return { kind: "insert", table, fields: fields() };
  };
  const write = async (ops: Record<string, unknown>[]) => {
    const ids = (await mutate("m:write", { ops })) as string[];
    let at = 0;
    for (const op of ops) if (op["kind"] === "insert") live.set(ids[at++]!, op["table"] as string);
    for (const op of ops) if (op["kind"] === "delete") live.delete(op["id"] as string);
  };
  await write(Array.from({ length: 40 }, insert));

  const subscriptions: Subscription[] = [];
  const subscribe = async (path: string, args: Record<string, unknown>) => {
    const run = await runtime.runQueryRecorded(path, args, { describe: true });
    expect(run.outcome.kind, `${path} ${shown(args)}: ${String((run.outcome as { error?: unknown }).error)}`).toBe("ok");
    subscriptions.push({ path, args, state: run.diffable ?? null, readTs: run.readTs });
  };
  for (let i = 0; i < 30; i++) {
    const index = pick(indexes);
    const range = { table: index.table, index: index.name, fields: [...index.fields], eq: index.fields.slice(0, randomInt(random, index.fields.length + 1)).map(() => pick(VALUES)), order: pick(["asc", "desc"] as const) };
    switch (randomInt(random, 4)) {
      case 0:
        await subscribe("q:get", { id: pick([...live.keys()]) });
        break;
      case 1:
        await subscribe("q:take", { ...range, n: pick([1, 2, 5, 10]) });
        break;
      case 2:
        await subscribe("q:all", range);
        break;
      default: {
        const numItems = 1 + randomInt(random, 4);
        await subscribe("q:page", { ...range, paginationOpts: { cursor: null, numItems } });
        const first = await runtime.runQuery("q:page", { ...range, paginationOpts: { cursor: null, numItems } });
        await subscribe("q:page", { ...range, paginationOpts: { cursor: null, endCursor: (first.value as { continueCursor: string }).continueCursor, numItems } });
      }
    }
  }
  const counts = { diffs: 0, changed: 0, declined: 0 };
  for (let step = 0; step < 50; step++) {
    const commits = 1 + randomInt(random, 2);
    for (let c = 0; c < commits; c++) {
      const ops: Record<string, unknown>[] = [];
      for (let o = 1 + randomInt(random, 3); o > 0; o--) {
        const ids = [...live.keys()].filter((id) => !ops.some((op) => op["id"] === id));
        const kind = ids.length < 10 ? 0 : randomInt(random, 4);
        if (kind === 0) ops.push(insert());
        else if (kind === 3) ops.push({ kind: "delete", id: pick(ids) });
        else ops.push({ kind: "patch", id: pick(ids), fields: fields() });
      }
      await write(ops);
    }
    await checkSubscriptions(runtime, revisions, subscriptions, `random schema, seed ${seed}`, counts);
  }
  return counts;
}
