/**
 * Scenario: the Deployment view of a writer, assembled from real parts. Writer "a"
 * commits; follower "b" catches up, publishes its watermark and falls behind by three
 * more commits; "a" snapshots and collects garbage, which b's watermark holds back; "b"
 * and a standby "c" are registered nodes; the schema gained an index that is still
 * backfilling. The view names this node first, each shard's writer, lease, log bounds
 * and snapshot, b's lag, the last snapshot and GC run, the store's requests and their
 * cost, and the schema. A second test feeds edge values by hand: a follower ahead of
 * this node's copy, a tail hint past it, a shard without a writer, a stale entry of this
 * node among the others.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { ManualClock } from "../../src/base/clock.js";
import { NodeRegistry, liveNodes, type NodeEntry } from "../../src/fleet/NodeRegistry.js";
import { Catalog, resolveCatalog } from "../../src/functions/catalog.js";
import { defineSchema, defineTable } from "../../src/functions/schema.js";
import { v } from "../../src/functions/values.js";
import { ConsumerWatermarks } from "../../src/gc/ConsumerWatermarks.js";
import type { Manifest } from "../../src/manifest/Manifest.js";
import { ObservedObjectStore } from "../../src/objectstore/ObservedObjectStore.js";
import { ShardTailer } from "../../src/replica/ShardTailer.js";
import { deploymentView, type NodeHealth } from "../../src/server/deploymentView.js";
import { followerWatermarks } from "../../src/server/followerWatermarks.js";
import { MaintenanceLog } from "../../src/server/MaintenanceLog.js";
import { nodeHealth } from "../../src/server/nodeHealth.js";
import { S3_STANDARD_REQUEST_PRICES_USD_PER_1000, StoreRequestWindow } from "../../src/server/storeCost.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { commitMany, ShardHarness } from "../support/shardHarness.js";

const messages = { body: v.string(), channel: v.string() };

describe("deployment view", () => {
  it("shows a writer's shard, its follower's lag, the last snapshot and GC, the store's cost and the schema", async () => {
    const harness = await ShardHarness.create(memoryBucket);
    const { clock } = harness;
    const random = new SeededRandom(11);
    try {
      const a = await harness.writer("a");
      const maintenance = new MaintenanceLog(clock);
      const feed = () => {
        for (const event of a.events.splice(0)) maintenance.engineEvent(event);
      };
      await commitMany(a, harness, 4);
      const b = await harness.node("b");
      await b.engine.catchUpToTail();
      const bApplied = b.engine.position.nextSeqno - 1;
      const watermarkAt = clock.nowMs();
      await new ConsumerWatermarks(harness.bucket, 0, random).publish("b", bApplied, watermarkAt);
      await commitMany(a, harness, 3);
      const lastSeqno = a.engine.position.nextSeqno - 1;
      expect(lastSeqno).toBe(bApplied + 3);

      clock.advance(1_000);
      const snapshot = (await a.engine.snapshotNow())!;
      feed();
      const snapshotAt = clock.nowMs();
      clock.advance(1_000);
      const gc = await a.engine.collectGarbageNow();
      feed();
      const gcAt = clock.nowMs();
      expect(gc.heldBackBy).toBe(bApplied + 1);

      // The schema first had one index on messages; a later deploy added a second.
      await resolveCatalog(harness.bucket, defineSchema({ messages: defineTable(messages).index("by_channel", ["channel"]) }), random);
      const catalog = await resolveCatalog(
        harness.bucket,
        defineSchema({ messages: defineTable(messages).index("by_channel", ["channel"]).index("by_body", ["body"]), rooms: defineTable({ name: v.string() }).shardKey("name") }),
        random,
      );

      await new NodeRegistry(harness.bucket, harness.deploymentId, "b", random).register({ url: "http://10.0.0.2:3210", role: "replica" }, clock.nowMs(), 90_000);
      await new NodeRegistry(harness.bucket, harness.deploymentId, "c", random).register({ url: null, role: "standby", writes: [] }, clock.nowMs(), 90_000);
      const others = await liveNodes(harness.bucket, harness.deploymentId, random, clock.nowMs(), "a");

      // The dashboard's own reads go through the node's observed store, so they count.
      const window = new StoreRequestWindow(clock);
      const observed = new ObservedObjectStore(harness.bucket, (call) => window.record(call.operation), () => clock.monotonicMs());
      const followers = await followerWatermarks({ store: observed, random, clock, numShards: 1 }).read();
      clock.advance(1_000);

      const tailer = new ShardTailer({ engine: a.engine, consumerId: "a", clock });
      const health = nodeHealth({
        nodeId: "a",
        deploymentId: harness.deploymentId,
        clock,
        engines: [a.engine],
        tailers: [tailer],
        roles: ["writing"],
        nodeRole: "writer",
        frontierTs: a.engine.closedTs,
        sessions: 2,
        retired: null,
        fleet: null,
      });
      const view = deploymentView({
        health,
        url: "http://10.0.0.1:3210",
        presence: { updatedAt: clock.nowMs() - 5_000, expiresAt: clock.nowMs() + 85_000 },
        others,
        logs: [{ manifest: a.engine.manifestCurrent, nextSeqno: a.engine.position.nextSeqno }],
        followers,
        maintenance,
        store: window.lastHour(),
        catalog,
        sync: { sessions: 2, subscriptions: 7 },
      });
      await tailer.stop();

      const manifest = a.engine.manifestCurrent;
      expect(view.node).toEqual({ nodeId: "a", role: "writer", url: "http://10.0.0.1:3210", deploymentId: harness.deploymentId, status: "ok" });
      expect(view.nodes).toEqual([
        { nodeId: "a", role: "writer", url: "http://10.0.0.1:3210", writes: [0], updatedAt: clock.nowMs() - 5_000, expiresAt: clock.nowMs() + 85_000, self: true },
        { nodeId: "b", role: "replica", url: "http://10.0.0.2:3210", writes: null, updatedAt: clock.nowMs() - 1_000, expiresAt: clock.nowMs() + 89_000, self: false },
        { nodeId: "c", role: "standby", url: null, writes: [], updatedAt: clock.nowMs() - 1_000, expiresAt: clock.nowMs() + 89_000, self: false },
      ]);
      expect(view.frontier).toEqual({ ts: a.engine.closedTs, heldBy: { shard: 0, heldBackMs: 0, writer: "a", writerLive: true } });
      expect(view.shards).toEqual([
        {
          shard: 0,
          role: "writing",
          writer: "a",
          epoch: manifest.epoch,
          leaseExpiresAt: manifest.leaseExpiresAt,
          writerLive: true,
          appliedSeqno: lastSeqno,
          frontierTs: a.engine.closedTs,
          stalenessMs: 0,
          lastError: null,
          logStart: bApplied + 1,
          nextSeqno: lastSeqno + 1,
          snapshot: { seqno: snapshot.seqno, maxTs: snapshot.ts },
          followers: [{ consumerId: "b", appliedSeqno: bApplied, lagSegments: 3, updatedAt: watermarkAt }],
          lastSnapshot: { time: snapshotAt, seqno: snapshot.seqno },
          lastGc: { time: gcAt, segmentsDeleted: bApplied + 1, logStartAfter: bApplied + 1, heldBackBy: bApplied + 1 },
        },
      ]);
      expect(snapshot.seqno).toBe(lastSeqno);
      // One LIST of shard 0's consumers and one GET of b's watermark.
      expect(view.store).toEqual({
        requestsLastHour: { list: 1, get: 1 },
        windowMs: 1_000,
        costPerHour: { requestsUsd: Math.round((0.0054 / 1000) * 60 * 1e6) / 1e6, prices: S3_STANDARD_REQUEST_PRICES_USD_PER_1000 },
      });
      // Cairn's system tables (numbered when the first schema was registered) come last.
      expect(view.schema.tables.slice(2).map((table) => [table.name, table.number, table.shardKey])).toEqual([
        ["_scheduled_functions", 2, "_id"],
        ["_storage", 3, "_id"],
      ]);
      expect(view.schema.tables.slice(0, 2)).toEqual([
        {
          name: "messages",
          number: 1,
          shardKey: null,
          indexes: [
            { name: "by_id", fields: ["_id"], state: "ready", system: true },
            { name: "by_creation", fields: ["_creationTime", "_id"], state: "ready", system: true },
            { name: "by_channel", fields: ["channel"], state: "ready", system: false },
            { name: "by_body", fields: ["body"], state: "backfilling", system: false },
          ],
        },
        {
          name: "rooms",
          number: 4,
          shardKey: "name",
          indexes: [
            { name: "by_id", fields: ["_id"], state: "ready", system: true },
            { name: "by_creation", fields: ["_creationTime", "_id"], state: "ready", system: true },
          ],
        },
      ]);
      expect([view.sessions, view.subscriptions]).toEqual([2, 7]);
      // What the route answers is JSON: nothing in the view is lost in it.
      expect(JSON.parse(JSON.stringify(view))).toEqual(view);
    } finally {
      await harness.close();
    }
  });

  it("never shows a negative lag, trusts a tail hint past this node's copy, and lists this node once", () => {
    const clock = new ManualClock();
    const nowMs = clock.nowMs();
    const manifest = (shard: number, fields: Partial<Manifest>): Manifest => ({
      format: 1,
      deploymentId: "d1",
      shard,
      version: 3,
      nonce: "n",
      epoch: 2,
      writer: { nodeId: "w", url: "http://10.0.0.9:3210" },
      leaseExpiresAt: nowMs + 10_000,
      logStart: 0,
      snapshot: null,
      tailHint: -1,
      fences: [],
      inheritedFrom: [],
      collecting: null,
      ...fields,
    });
    const shardHealth = (shard: number, writer: string | null) => ({
      shard,
      state: "following" as const,
      role: "following" as const,
      appliedSeqno: 9,
      frontierTs: 1_000,
      lastDataTs: 1_000,
      stalenessMs: 250,
      lastError: shard === 1 ? { code: "STORE_UNREACHABLE", message: "down" } : null,
      writer,
      epoch: 2,
      leaseExpiresAt: writer === null ? null : new Date(nowMs + 10_000).toISOString(),
      writerLive: writer !== null,
    });
    const health: NodeHealth = {
      status: "degraded",
      role: "replica",
      nodeId: "r1",
      deploymentId: "d1",
      shards: [shardHealth(0, "w"), shardHealth(1, null)],
      frontierTs: 1_000,
      frontierHeldBy: { shard: 1, heldBackMs: 0, writer: null, writerLive: false },
      stalenessMs: 250,
      sessions: 0,
    };
    const entry = (nodeId: string, fields: Partial<NodeEntry> = {}): NodeEntry => ({
      version: 1,
      nonce: "n",
      deploymentId: "d1",
      nodeId,
      url: null,
      role: "replica",
      expiresAt: nowMs + 60_000,
      updatedAt: nowMs,
      ...fields,
    });
    const view = deploymentView({
      health,
      url: null,
      presence: { updatedAt: null, expiresAt: null },
      // This node's own (stale) entry must not show twice; others come sorted.
      others: [entry("z9"), entry("r1", { url: "http://old" }), entry("w", { role: "writer", writes: [0] })],
      logs: [
        { manifest: manifest(1, { writer: null, leaseExpiresAt: nowMs - 1, epoch: 2 }), nextSeqno: 10 },
        // The writer's manifest says the log reaches at least seqno 14; this copy is at 9.
        { manifest: manifest(0, { tailHint: 14, logStart: 3, snapshot: { seqno: 5, ts: 900, epoch: 2, hash: null, key: "s0/snapshots/5", parts: 1, bytes: 10, sha256: "0".repeat(64), documents: 1 } }), nextSeqno: 10 },
      ],
      followers: [
        {
          shard: 0,
          followers: [
            { consumerId: "r1", appliedSeqno: 9, updatedAt: nowMs },
            { consumerId: "r2", appliedSeqno: 20, updatedAt: nowMs },
            { consumerId: "r3", appliedSeqno: -1, updatedAt: nowMs - 86_400_000 },
          ],
          readAt: nowMs,
          error: null,
        },
      ],
      maintenance: new MaintenanceLog(clock),
      store: { requestsLastHour: {}, windowMs: 0 },
      catalog: new Catalog([]),
      sync: { sessions: 0, subscriptions: 0 },
    });
    expect(view.nodes.map((node) => [node.nodeId, node.self, node.url])).toEqual([
      ["r1", true, null],
      ["w", false, null],
      ["z9", false, null],
    ]);
    expect(view.nodes[0]!.writes).toEqual([]);
    expect(view.nodes[1]!.writes).toEqual([0]);
    const [zero, one] = view.shards;
    expect(zero).toMatchObject({ writer: "w", leaseExpiresAt: nowMs + 10_000, logStart: 3, nextSeqno: 15, snapshot: { seqno: 5, maxTs: 900 }, lastSnapshot: null, lastGc: null });
    expect(zero!.followers.map((follower) => [follower.consumerId, follower.lagSegments])).toEqual([
      ["r1", 5],
      ["r2", 0],
      ["r3", 15],
    ]);
    expect(one).toMatchObject({ writer: null, leaseExpiresAt: null, writerLive: false, nextSeqno: 10, followers: [], lastError: { code: "STORE_UNREACHABLE", message: "down" } });
    expect(view.store.costPerHour.requestsUsd).toBe(0);
    expect(view.schema.tables).toEqual([]);
  });

  it("refuses to make up a shard it was given no manifest for", () => {
    const clock = new ManualClock();
    const health = { status: "ok", role: "writer", nodeId: "a", deploymentId: "d", shards: [{ shard: 0 }], frontierTs: 0, frontierHeldBy: { shard: 0, heldBackMs: 0, writer: "a", writerLive: true } } as unknown as NodeHealth;
    expect(() =>
      deploymentView({
        health,
        url: null,
        presence: { updatedAt: null, expiresAt: null },
        others: [],
        logs: [],
        followers: [],
        maintenance: new MaintenanceLog(clock),
        store: { requestsLastHour: {}, windowMs: 0 },
        catalog: new Catalog([]),
        sync: { sessions: 0, subscriptions: 0 },
      }),
    ).toThrow(/no manifest given for shard 0/);
  });
});
