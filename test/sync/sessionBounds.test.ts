/**
 * Scenarios: one session against a real writer pushes on each per-session bound — queries
 * past SESSION_QUERIES_MAX (refused, not counted against the runnable ones, and ending
 * the session once SESSION_REFUSED_QUERIES_MAX pile up), query arguments past
 * SESSION_QUERY_ARGS_BYTES_MAX, and frames that arrive faster than they finish past
 * SESSION_INBOUND_BYTES_MAX. Every refusal is SESSION_LIMIT_EXCEEDED; another session is
 * unaffected.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  SESSION_INBOUND_BYTES_MAX,
  SESSION_QUERIES_MAX,
  SESSION_QUERY_ARGS_BYTES_MAX,
  SESSION_REFUSED_QUERIES_MAX,
} from "../../src/base/limits.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";
import { syncFixture, type ModelClient, type SyncFixture } from "./syncHarness.js";

type Transition = Extract<ServerMessage, { type: "Transition" }>;

describe("a session's bounds", () => {
  const harness = harnessPerTest(memoryBucket);
  let fixture: SyncFixture | null = null;
  afterEach(async () => {
    await fixture?.handler.close(0);
    fixture = null;
  });
  const open = async () => (fixture = await syncFixture(await harness()));

  /** One ModifyQuerySet; resolves with the Transition that answers it. */
  async function modify(client: ModelClient, add: { queryId: number; args: unknown }[], remove: number[] = []): Promise<Transition> {
    const base = client.version.querySet;
    client.write({ type: "ModifyQuerySet", baseVersion: base, newVersion: base + 1, add: add.map((entry) => ({ ...entry, path: "notes:list" })), remove });
    return (await client.next((m) => m.type === "Transition" && m.endVersion.querySet === base + 1)) as Transition;
  }

  const range = (from: number, count: number) => Array.from({ length: count }, (_, at) => from + at);

  it("refuses queries past the limit without counting them, and ends a session that piles up refused ones", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    const full = await modify(client, range(1, SESSION_QUERIES_MAX).map((queryId) => ({ queryId, args: { channel: "a" } })));
    expect(full.modifications.every((m) => m.type === "QueryUpdated")).toBe(true);
    const over = await modify(client, [{ queryId: 5_000, args: { channel: "a" } }]);
    expect(over.modifications).toMatchObject([{ type: "QueryFailed", queryId: 5_000, error: { code: "SESSION_LIMIT_EXCEEDED" } }]);
    // A freed slot runs the next query: the refused one does not hold it.
    const swapped = await modify(client, [{ queryId: 5_001, args: { channel: "a" } }], [1]);
    expect(swapped.modifications).toMatchObject([{ type: "QueryRemoved", queryId: 1 }, { type: "QueryUpdated", queryId: 5_001, value: [] }]);
    // Refused queries are kept up to their own bound (each only an id and a shared result) …
    await modify(client, range(6_000, SESSION_REFUSED_QUERIES_MAX - 1).map((queryId) => ({ queryId, args: { channel: "a" } })));
    expect(client.closedWith).toBeNull();
    // … and one more ends the session.
    const base = client.version.querySet;
    client.write({ type: "ModifyQuerySet", baseVersion: base, newVersion: base + 1, add: [{ queryId: 9_999, path: "notes:list", args: { channel: "a" } }], remove: [] });
    expect(await client.next((m) => m.type === "FatalError")).toMatchObject({ error: { code: "SESSION_LIMIT_EXCEEDED" } });
    expect(client.closedWith).toMatchObject({ code: 4400 });
  });

  it("refuses a query whose arguments pass the session's arguments bound, and runs one once room is freed", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    const big = (queryId: number) => ({ queryId, args: { channel: `${"x".repeat(Math.floor(SESSION_QUERY_ARGS_BYTES_MAX / 3))}${queryId}` } });
    const first = await modify(client, [big(1), big(2)]);
    expect(first.modifications.map((m) => m.type)).toEqual(["QueryUpdated", "QueryUpdated"]);
    const third = await modify(client, [big(3)]);
    expect(third.modifications).toMatchObject([{ type: "QueryFailed", queryId: 3, error: { code: "SESSION_LIMIT_EXCEEDED" } }]);
    const freed = await modify(client, [big(4)], [1, 3]);
    expect(freed.modifications).toMatchObject([{ type: "QueryRemoved", queryId: 1 }, { type: "QueryRemoved", queryId: 3 }, { type: "QueryUpdated", queryId: 4, value: [] }]);
    // Another session is not affected by this one's bound.
    const other = f.client();
    await other.connect();
    expect((await modify(other, [big(1)])).modifications).toMatchObject([{ type: "QueryUpdated", queryId: 1 }]);
  });

  it("ends a session that sends frames faster than they finish, past the inbound bound", async () => {
    const f = await open();
    const client = f.client();
    await client.connect();
    // The first query's run is held: every frame after it waits its turn.
    const held = f.hold("notes:list");
    const base = client.version.querySet;
    client.write({ type: "ModifyQuerySet", baseVersion: base, newVersion: base + 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "held" } }], remove: [] });
    await held.reached;
    const frameChars = 1024 * 1024;
    const frames = Math.ceil(SESSION_INBOUND_BYTES_MAX / frameChars) + 1;
    for (let at = 1; at <= frames && client.closedWith === null; at++) {
      client.write({ type: "ModifyQuerySet", baseVersion: base + at, newVersion: base + at + 1, add: [{ queryId: 1 + at, path: "notes:list", args: { channel: "y".repeat(frameChars) } }], remove: [] });
    }
    expect(await client.next((m) => m.type === "FatalError")).toMatchObject({ error: { code: "SESSION_LIMIT_EXCEEDED" } });
    expect(client.closedWith).toMatchObject({ code: 4400 });
    expect(f.handler.sessionCount).toBe(0);
    held.release();
  });
});
