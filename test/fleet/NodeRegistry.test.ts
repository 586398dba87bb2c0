/**
 * Scenario: the node registry under `nodes/` (DESIGN.md §2, §9) on a real bucket —
 * memory, a directory, and the S3 test endpoint through the AWS SDK. Several nodes of one
 * deployment register, renew and leave; the bucket also holds what a registry must
 * survive: entries of another deployment, expired ones, ones written by hand in another
 * shape or not JSON at all. None of them may stop a scan, and a node whose own entry is
 * unreadable replaces it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { ObservedObjectStore, type StoreOperation } from "../../src/objectstore/ObservedObjectStore.js";
import { NodeRegistry } from "../../src/fleet/NodeRegistry.js";
import { memoryBucket, s3EndpointBucket } from "../support/bucketFactories.js";
import type { BucketFactory } from "../support/shardHarness.js";
import { fsBucket } from "../replica/replicaSupport.js";

const DEPLOYMENT = "0123456789abcdef0123456789abcdef";
const OTHER_DEPLOYMENT = "fedcba9876543210fedcba9876543210";
const NOW = 1_700_000_000_000;
const TTL = 30_000;
const text = (value: string) => new TextEncoder().encode(value);

async function codeOf(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe.each([memoryBucket, fsBucket, s3EndpointBucket] as BucketFactory[])("node registry on $name", (factory) => {
  let opened: { store: ObjectStore; close: () => Promise<void> } | undefined;
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
  });
  let seed = 1;
  async function bucket(): Promise<ObjectStore> {
    opened = await factory.open();
    return opened.store;
  }
  const registry = (store: ObjectStore, nodeId: string, deploymentId = DEPLOYMENT) => new NodeRegistry(store, deploymentId, nodeId, new SeededRandom(seed++));

  it("an exclusive (fleet) entry: a second process under the same id is refused while the first's entry is live, and takes over once it lapsed", async () => {
    const store = await bucket();
    const GRACE = 1_000;
    const first = new NodeRegistry(store, DEPLOYMENT, "node-x", new SeededRandom(seed++), GRACE);
    const second = new NodeRegistry(store, DEPLOYMENT, "node-x", new SeededRandom(seed++), GRACE);
    await first.register({ url: "http://10.0.0.1:1/", role: "fleet", writes: [0, 2] }, NOW, TTL);
    await first.register({ url: "http://10.0.0.1:1/", role: "fleet", writes: [0] }, NOW + 1_000, TTL);
    await expect(second.register({ url: "http://10.0.0.2:1/", role: "fleet" }, NOW + 2_000, TTL)).rejects.toMatchObject({
      code: "NODE_ID_IN_USE",
      details: { nodeId: "node-x", expiresAt: NOW + 1_000 + TTL },
    });
    // Within the grace past its expiry, still refused; past it, the id is taken over.
    await expect(second.register({ url: null, role: "fleet" }, NOW + 1_000 + TTL + GRACE - 1, TTL)).rejects.toMatchObject({ code: "NODE_ID_IN_USE" });
    await second.register({ url: "http://10.0.0.2:1/", role: "fleet" }, NOW + 1_000 + TTL + GRACE, TTL);
    // The first, renewing, finds the id taken: refused, never overwriting the live newcomer.
    await expect(first.register({ url: "http://10.0.0.1:1/", role: "fleet" }, NOW + 1_000 + TTL + GRACE + 1, TTL)).rejects.toMatchObject({ code: "NODE_ID_IN_USE" });
    const seen = await registry(store, "observer").live(NOW + 1_000 + TTL + GRACE + 2);
    expect(seen).toMatchObject([{ nodeId: "node-x", url: "http://10.0.0.2:1/", role: "fleet" }]);
    // A non-exclusive registry (the other roles) takes an entry over at once, as before.
    await registry(store, "node-x").register({ url: null, role: "writer" }, NOW + 1_000 + TTL + GRACE + 3, TTL);
  });

  it("register, renew, live and remove: every other live node of the deployment, never itself", async () => {
    const store = await bucket();
    const writer = registry(store, "writer-1");
    const replicaA = registry(store, "replica-a");
    const replicaB = registry(store, "replica-b");
    await writer.register({ url: "http://10.0.0.1:8080/", role: "writer" }, NOW, TTL);
    await replicaA.register({ url: "http://10.0.0.2:8080/", role: "replica" }, NOW, TTL);
    await replicaB.register({ url: null, role: "standby" }, NOW, TTL);

    const seenByWriter = await writer.live(NOW);
    expect(seenByWriter.map((entry) => entry.nodeId).sort()).toEqual(["replica-a", "replica-b"]);
    expect(seenByWriter.find((entry) => entry.nodeId === "replica-a")).toMatchObject({
      deploymentId: DEPLOYMENT,
      url: "http://10.0.0.2:8080/",
      role: "replica",
      expiresAt: NOW + TTL,
      updatedAt: NOW,
      version: 1,
    });
    expect(seenByWriter.find((entry) => entry.nodeId === "replica-b")).toMatchObject({ url: null, role: "standby" });
    expect((await replicaA.live(NOW)).map((entry) => entry.nodeId).sort()).toEqual(["replica-b", "writer-1"]);

    // Renewing moves the expiry (and may change the role) in place: one entry, a new version.
    await replicaA.register({ url: "http://10.0.0.2:8080/", role: "writer" }, NOW + 10_000, TTL);
    const renewed = (await writer.live(NOW + 10_000)).find((entry) => entry.nodeId === "replica-a");
    expect(renewed).toMatchObject({ role: "writer", expiresAt: NOW + 10_000 + TTL, updatedAt: NOW + 10_000, version: 2 });
    // Past the first expiry only the renewed entry is live.
    expect((await writer.live(NOW + TTL)).map((entry) => entry.nodeId)).toEqual(["replica-a"]);

    await replicaA.remove();
    expect(await store.get(bucketLayout.node("replica-a"))).toBeNull();
    expect((await writer.live(NOW)).map((entry) => entry.nodeId)).toEqual(["replica-b"]);
    await replicaA.remove(); // idempotent
  });

  it("a renewal is one conditional PUT without a GET; an entry deleted or overwritten meanwhile is written again", async () => {
    const store = await bucket();
    const operations: StoreOperation[] = [];
    const observed = new ObservedObjectStore(store, (call) => operations.push(call.operation));
    const self = registry(observed, "self");
    const observer = registry(store, "observer");
    await self.register({ url: "http://self/", role: "replica" }, NOW, TTL);
    operations.splice(0);
    await self.register({ url: "http://self/", role: "replica" }, NOW + 1_000, TTL);
    expect(operations).toEqual(["casPut"]);
    expect(await observer.live(NOW + TTL)).toEqual([expect.objectContaining({ nodeId: "self", expiresAt: NOW + 1_000 + TTL, version: 2 })]);

    // Deleted behind its back (an operator, a cleanup): the CAS fails and it creates the entry again.
    await store.delete(bucketLayout.node("self"));
    await self.register({ url: "http://self/", role: "writer" }, NOW + 2_000, TTL);
    expect(await observer.live(NOW)).toEqual([expect.objectContaining({ nodeId: "self", role: "writer", expiresAt: NOW + 2_000 + TTL })]);

    // Overwritten by another writer of the same key: re-read and replaced, at a higher version.
    const other = registry(store, "self");
    await other.register({ url: "http://elsewhere/", role: "standby" }, NOW + 3_000, TTL);
    const overwritten = (await observer.live(NOW))[0]!.version;
    await self.register({ url: "http://self/", role: "replica" }, NOW + 4_000, TTL);
    expect(await observer.live(NOW)).toEqual([expect.objectContaining({ url: "http://self/", role: "replica", version: overwritten + 1 })]);

    // After remove(), a later register starts from a read again (nothing stale is CASed against).
    await self.remove();
    operations.splice(0);
    await self.register({ url: "http://self/", role: "replica" }, NOW + 5_000, TTL);
    expect(operations).toEqual(["get", "create"]);
  });

  it("an entry is live strictly before its expiresAt, not at it", async () => {
    const store = await bucket();
    await registry(store, "replica").register({ url: "http://replica/", role: "replica" }, NOW, TTL);
    const writer = registry(store, "writer");
    expect(await writer.live(NOW + TTL - 1)).toHaveLength(1);
    expect(await writer.live(NOW + TTL)).toEqual([]);
  });

  it("skips entries of another deployment, expired ones, malformed ones and stray keys, and returns the rest", async () => {
    const store = await bucket();
    await registry(store, "good-1").register({ url: "http://good-1/", role: "replica" }, NOW, TTL);
    await registry(store, "other-deployment", OTHER_DEPLOYMENT).register({ url: "http://other/", role: "replica" }, NOW, TTL);
    await registry(store, "expired").register({ url: "http://expired/", role: "replica" }, NOW - TTL - 1, TTL);
    await store.create(bucketLayout.node("not-json"), text("{ this is not json"));
    await store.create(bucketLayout.node("not-utf8"), new Uint8Array([0xff, 0xfe, 0xfd]));
    await store.create(bucketLayout.node("wrong-shape"), text(JSON.stringify({ hello: "world" })));
    await store.create(
      bucketLayout.node("bad-url"),
      text(JSON.stringify({ version: 1, nonce: "n", deploymentId: DEPLOYMENT, nodeId: "bad-url", url: "not a url", role: "replica", expiresAt: NOW + TTL, updatedAt: NOW })),
    );
    // A valid entry under the wrong key: it names another node (a copy, or a forgery).
    await store.create(
      bucketLayout.node("impostor"),
      text(JSON.stringify({ version: 1, nonce: "n", deploymentId: DEPLOYMENT, nodeId: "good-1", url: "http://evil/", role: "replica", expiresAt: NOW + TTL, updatedAt: NOW })),
    );
    // Keys under nodes/ that cannot be a node id, one of them holding a well-formed entry.
    await store.create("nodes/nested/entry", text("{}"));
    await store.create(
      "nodes/with space",
      text(JSON.stringify({ version: 1, nonce: "n", deploymentId: DEPLOYMENT, nodeId: "with space", url: "http://space/", role: "replica", expiresAt: NOW + TTL, updatedAt: NOW })),
    );
    await registry(store, "good-2").register({ url: "http://good-2/", role: "standby" }, NOW, TTL);

    const live = await registry(store, "writer").live(NOW);
    expect(live.map((entry) => [entry.nodeId, entry.url]).sort()).toEqual([
      ["good-1", "http://good-1/"],
      ["good-2", "http://good-2/"],
    ]);
    // The other deployment's registry sees only its own node's peers (none) likewise.
    expect(await registry(store, "someone", OTHER_DEPLOYMENT).live(NOW)).toHaveLength(1);
  });

  it("replaces its own entry when it is unreadable (another shape, not JSON), instead of never registering", async () => {
    const store = await bucket();
    const self = registry(store, "self");
    const observer = registry(store, "observer");
    for (const garbage of [text(JSON.stringify({ nodeId: "self", url: 42 })), text("%%% not json"), new Uint8Array([0xc3, 0x28])]) {
      await store.delete(bucketLayout.node("self"));
      await store.create(bucketLayout.node("self"), garbage);
      expect(await observer.live(NOW)).toEqual([]);
      await self.register({ url: "http://self/", role: "replica" }, NOW, TTL);
      expect(await observer.live(NOW)).toEqual([expect.objectContaining({ nodeId: "self", url: "http://self/", role: "replica", version: 1 })]);
    }
  });

  it("refuses an invalid node id or entry with INVALID_ARGUMENT and writes nothing", async () => {
    const store = await bucket();
    for (const nodeId of ["", "has space", "a/b", "x".repeat(129)]) {
      let error: unknown;
      try {
        registry(store, nodeId);
      } catch (caught) {
        error = caught;
      }
      expect(hasErrorCode(error, "INVALID_ARGUMENT")).toBe(true);
    }
    const node = registry(store, "node");
    expect(await codeOf(node.register({ url: "not a url", role: "replica" }, NOW, TTL))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(node.register({ url: null, role: "leader" as never }, NOW, TTL))).toBe("INVALID_ARGUMENT");
    expect(await codeOf(node.register({ url: null, role: "replica" }, -TTL * 2, TTL))).toBe("INVALID_ARGUMENT");
    const keys: string[] = [];
    for await (const entry of store.list("nodes/")) keys.push(entry.key);
    expect(keys).toEqual([]);
  });
});

describe("node registry scan bound", () => {
  it("reads at most a bounded number of entries per scan, so a flooded nodes/ cannot stall a writer", async () => {
    const { store, close } = await memoryBucket.open();
    try {
      for (let index = 0; index < 300; index++) {
        await new NodeRegistry(store, DEPLOYMENT, `n-${String(index).padStart(3, "0")}`, new SeededRandom(index)).register({ url: `http://n${index}/`, role: "replica" }, NOW, TTL);
      }
      let gets = 0;
      const counting = new ObservedObjectStore(store, (call) => {
        if (call.operation === "get") gets++;
      });
      const live = await new NodeRegistry(counting, DEPLOYMENT, "writer", new SeededRandom(1)).live(NOW);
      expect(live.length).toBeLessThan(300);
      expect(live.length).toBeGreaterThan(0);
      expect(gets).toBe(live.length);
    } finally {
      await close();
    }
  });
});
