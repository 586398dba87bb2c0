/**
 * Scenario: the S3 adapter over real HTTP, real SigV4 and the real AWS SDK, against the
 * S3 test endpoint (test/support/s3-endpoint): the contract suite with the SDK's default
 * checksums, with checksums=when_required, and in radosgw mode (If-Match compared with
 * its quotes, 500 to racing losers); then the S3-specific duties — refusing wrong
 * credentials, missing buckets and dead endpoints at open; resolving a conditional write
 * whose answer was lost or was a 5xx by reading the key back (success when our bytes are
 * there, a repeat when nothing landed, a conflict or an ambiguous outcome otherwise, and
 * never letting the SDK retry it); retrying 429 answers and giving up with STORE_TRANSIENT;
 * learning the If-Match etag form once (quoted on AWS, bare on radosgw) and honouring a
 * pinned one; DeleteObjects in batches; and the conditional-write probe per store flavour.
 * When CAIRN_TEST_S3_URL is set, the contract suite also runs against that real store
 * (prefixes cleaned up with the minio client); under CAIRN_TEST_S3_REQUIRED=1 (npm run
 * test:s3) a missing URL fails.
 */
import { createServer, type AddressInfo, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/base/clock.js";
import { isCasConflict } from "../../src/base/errors.js";
import { assertConditionalWrites, PROBE_PREFIX } from "../../src/objectstore/assertConditionalWrites.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { openObjectStore } from "../../src/objectstore/openObjectStore.js";
import type { RetryPolicy } from "../../src/objectstore/retry.js";
import { readBackVerdict, S3ObjectStore, type S3ObjectStoreOptions } from "../../src/objectstore/S3ObjectStore.js";
import {
  assertRealS3Configured,
  ensureBucket,
  newTestPrefix,
  realS3,
  realS3Required,
  removePrefix,
  storeUrlFor,
  type RealS3,
} from "../support/realS3.js";
import { eventually, Gate } from "../support/Gate.js";
import { etagOf } from "../support/s3-endpoint/etags.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import {
  bytes,
  collect,
  defineObjectStoreConformance,
  emptyStore,
  expectBody,
  expectConflict,
  type StoreFactory,
} from "./conformance.js";

/** Keeps the give-up tests quick: the attempt count is what they check, not the waits. */
const QUICK_RETRIES: RetryPolicy = { attemptsMax: 6, backoffBaseMs: 1, backoffMaxMs: 4 };

let endpoint: S3Endpoint;
let prefixSequence = 0;

beforeAll(async () => {
  endpoint = await startS3Endpoint({ mode: "aws", seed: 1 });
});

afterAll(async () => {
  await endpoint.close();
});

afterEach(() => {
  endpoint.faults.clear();
  endpoint.setMode("aws");
});

function uniquePrefix(): string {
  prefixSequence += 1;
  return `run-${process.pid}-${prefixSequence}/`;
}

function endpointStore(overrides: Partial<S3ObjectStoreOptions> = {}): S3ObjectStore {
  return new S3ObjectStore({
    bucket: endpoint.bucket,
    prefix: uniquePrefix(),
    region: endpoint.region,
    endpoint: endpoint.url,
    credentials: endpoint.credentials,
    ...overrides,
  });
}

function cleanupOf(store: ObjectStore): () => Promise<void> {
  return async () => {
    endpoint.faults.clear();
    await emptyStore(store);
    await store.close();
  };
}

describe("S3ObjectStore → test endpoint, default checksums", () => {
  defineObjectStoreConformance("S3 test endpoint (checksums when supported)", async () => {
    const store = endpointStore();
    return { store, cleanup: cleanupOf(store) };
  });
});

describe("S3ObjectStore → test endpoint, checksums=when_required (opened by URL)", () => {
  defineObjectStoreConformance("S3 test endpoint (checksums when required)", async () => {
    const url = `s3://${endpoint.bucket}/${uniquePrefix()}?endpoint=${endpoint.url}&region=${endpoint.region}&checksums=when_required`;
    const store = await openObjectStore(url, { s3: { credentials: endpoint.credentials } });
    return { store, cleanup: cleanupOf(store) };
  });
});

describe("S3ObjectStore → test endpoint in radosgw mode (If-Match compared with its quotes, 500 to racing losers)", () => {
  let radosgw: S3Endpoint;
  beforeAll(async () => {
    radosgw = await startS3Endpoint({ mode: "radosgw", seed: 2 });
    // Jitter makes casPut racers overlap, so that losers meet radosgw's 500.
    radosgw.faults.set([{ operations: ["PutObject"], jitterMs: 5, lostRace500Rate: 1 }]);
  });
  afterAll(async () => {
    await radosgw.close();
  });
  const radosgwStore = async (probeAtOpen: boolean) => {
    const store = new S3ObjectStore({
      bucket: radosgw.bucket,
      prefix: uniquePrefix(),
      region: radosgw.region,
      endpoint: radosgw.url,
      credentials: radosgw.credentials,
    });
    if (probeAtOpen) {
      expect(await assertConditionalWrites(store)).toEqual({ ifMatchEtagForm: "bare" });
    }
    return {
      store,
      cleanup: async () => {
        const learned = store.ifMatchEtagForm;
        await emptyStore(store);
        await store.close();
        // Every test that saw a casPut succeed has taught the store the bare form.
        expect(["unknown", "bare"]).toContain(learned);
      },
    };
  };
  // The form learned on the way, by whichever casPut first succeeds.
  defineObjectStoreConformance("S3 test endpoint (radosgw mode)", () => radosgwStore(false));
  // Probed at open as `cairn serve` does: every casPut is bare, so racers really race.
  defineObjectStoreConformance("S3 test endpoint (radosgw mode, probed at open)", () => radosgwStore(true));
});

const configuredRealS3 = realS3();

describe("S3ObjectStore → CAIRN_TEST_S3_URL (a real MinIO, S3, R2 or radosgw)", () => {
  it.skipIf(configuredRealS3 === undefined && !realS3Required())(
    "is configured — skipped unless CAIRN_TEST_S3_URL='s3://bucket/prefix?endpoint=…&region=…' and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are set (see README: Object stores); fails under CAIRN_TEST_S3_REQUIRED=1",
    async () => {
      const s3 = assertRealS3Configured();
      await ensureBucket(s3);
      const store = await openObjectStore(s3.url);
      await store.close();
    },
  );
  if (configuredRealS3 !== undefined) {
    defineObjectStoreConformance(`S3 at ${configuredRealS3.description}`, realStoreFactory(configuredRealS3));
  }
});

/**
 * Each test gets its own prefix under the URL's prefix, opened the way the CLI opens it,
 * and emptied afterwards with the minio client rather than with the adapter under test.
 */
function realStoreFactory(s3: RealS3): StoreFactory {
  return async () => {
    await ensureBucket(s3);
    const prefix = newTestPrefix("conformance");
    const store = await openObjectStore(storeUrlFor(s3, prefix));
    return {
      store,
      cleanup: async () => {
        await store.close();
        await removePrefix(s3, prefix);
      },
    };
  };
}

describe("openObjectStore on S3 checks the bucket", () => {
  it("refuses wrong credentials with STORE_ACCESS_DENIED", async () => {
    const url = `s3://${endpoint.bucket}?endpoint=${endpoint.url}`;
    const credentials = { accessKeyId: endpoint.credentials.accessKeyId, secretAccessKey: "not-the-secret" };
    await expect(openObjectStore(url, { s3: { credentials } })).rejects.toMatchObject({
      code: "STORE_ACCESS_DENIED",
      message: expect.stringContaining("wrong credentials or no permission"),
    });
    const unknownKey = { accessKeyId: "nobody", secretAccessKey: "nothing" };
    await expect(openObjectStore(url, { s3: { credentials: unknownKey } })).rejects.toMatchObject({
      code: "STORE_ACCESS_DENIED",
    });
  });

  it("refuses a missing bucket with STORE_BUCKET_MISSING, and so does every operation on it", async () => {
    const url = `s3://no-such-bucket?endpoint=${endpoint.url}`;
    await expect(openObjectStore(url, { s3: { credentials: endpoint.credentials } })).rejects.toMatchObject({
      code: "STORE_BUCKET_MISSING",
    });
    const store = endpointStore({ bucket: "no-such-bucket" });
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_BUCKET_MISSING" });
    await expect(store.create("k", bytes("v"))).rejects.toMatchObject({ code: "STORE_BUCKET_MISSING" });
    await expect(store.casPut("k", bytes("v"), "abc")).rejects.toMatchObject({ code: "STORE_BUCKET_MISSING" });
    await expect(store.delete("k")).rejects.toMatchObject({ code: "STORE_BUCKET_MISSING" });
    await expect(collect(store.list(""))).rejects.toMatchObject({ code: "STORE_BUCKET_MISSING" });
    await store.close();
  });

  it("reports an endpoint nobody listens on as STORE_UNREACHABLE, for reads and writes alike", async () => {
    const closedPort = await unusedPort();
    const url = `s3://${endpoint.bucket}?endpoint=http://127.0.0.1:${closedPort}`;
    await expect(openObjectStore(url, { s3: { credentials: endpoint.credentials } })).rejects.toMatchObject({
      code: "STORE_UNREACHABLE",
    });
    const store = endpointStore({ endpoint: `http://127.0.0.1:${closedPort}`, retryPolicy: QUICK_RETRIES });
    // Nothing was sent, so a refused conditional write is not ambiguous.
    await expect(store.create("k", bytes("v"))).rejects.toMatchObject({ code: "STORE_UNREACHABLE" });
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_UNREACHABLE" });
    await store.close();
  });

  it("reports an endpoint that accepts connections but never answers as STORE_UNREACHABLE", async () => {
    const silent = createServer(() => undefined);
    const sockets = new Set<Socket>();
    silent.on("connection", (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    // Time runs 50× faster on this clock, so the answer timeouts pass in milliseconds.
    const fastClock: Clock = { nowMs: () => Date.now(), monotonicMs: () => performance.now(), sleep: (ms, signal) => systemClock.sleep(ms / 50, signal), setTimer: systemClock.setTimer };
    try {
      await expect(
        openObjectStore(`s3://${endpoint.bucket}?endpoint=http://127.0.0.1:${port}`, {
          clock: fastClock,
          s3: { credentials: endpoint.credentials },
        }),
      ).rejects.toMatchObject({ code: "STORE_UNREACHABLE", message: expect.stringContaining("no answer within") });
      expect(sockets.size).toBeGreaterThanOrEqual(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("writes nothing when it opens a bucket", async () => {
    endpoint.resetCounters();
    const store = await openObjectStore(`s3://${endpoint.bucket}/${uniquePrefix()}?endpoint=${endpoint.url}`, {
      s3: { credentials: endpoint.credentials },
    });
    await store.close();
    const counters = endpoint.counters();
    expect(counters.HeadBucket.requests).toBe(1);
    expect(counters.PutObject.requests + counters.DeleteObject.requests + counters.DeleteObjects.requests).toBe(0);
  });
});

describe("S3ObjectStore lost answers", () => {
  it("resolves a create whose answer was dropped by reading it back: success, sent once, and stored", async () => {
    const store = endpointStore();
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    endpoint.resetCounters();
    const created = await store.create("dropped", bytes("mine"));
    const counters = endpoint.counters();
    expect([counters.PutObject.requests, counters.GetObject.requests]).toEqual([1, 1]);
    endpoint.faults.clear();
    expect(expectBody(await store.get("dropped"))).toEqual({ body: bytes("mine"), etag: created.etag });
    await cleanupOf(store)();
  });

  it("resolves a casPut whose answer was dropped by reading it back: success with the new etag", async () => {
    const store = endpointStore();
    const { etag } = await store.create("cas", bytes("v1"));
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    endpoint.resetCounters();
    const replaced = await store.casPut("cas", bytes("v2"), etag);
    expect(endpoint.counters().PutObject.requests).toBe(1);
    endpoint.faults.clear();
    expect(expectBody(await store.get("cas"))).toEqual({ body: bytes("v2"), etag: replaced.etag });
    await cleanupOf(store)();
  });

  it("reports a dropped casPut as STORE_AMBIGUOUS_OUTCOME when another writer replaced it before the read-back", async () => {
    const prefix = uniquePrefix();
    const store = endpointStore({ prefix });
    const { etag } = await store.create("cas", bytes("v1"));
    // Ours lands and its answer is lost; the read-back is held while another writer, which
    // read our object, replaces it.
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    endpoint.faults.pause({ operations: ["GetObject"] });
    const outcome = store.casPut("cas", bytes("v2 ours"), etag).catch((reason: unknown) => reason);
    await eventually(() => endpoint.faults.heldRequests === 1);
    const stored = endpoint.peek(endpoint.bucket, `${prefix}cas`);
    expect(stored).toEqual(bytes("v2 ours"));
    const other = endpointStore({ prefix });
    await other.casPut("cas", bytes("v3 theirs"), etagOf(stored as Uint8Array));
    endpoint.faults.release();
    const error = await outcome;
    expect(error).toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { readBack: "ambiguous" } });
    await other.close();
    await cleanupOf(store)();
  });

  it("retries idempotent reads and deletes whose answers were dropped", async () => {
    const store = endpointStore();
    await store.create("k", bytes("v"));
    endpoint.faults.set([{ operations: ["GetObject", "ListObjectsV2", "DeleteObject"], dropAfterCommit: 3 }]);
    endpoint.resetCounters();
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v"));
    expect(await collect(store.list(""))).toHaveLength(1);
    await store.delete("k");
    expect(await store.get("k")).toBeNull();
    const counters = endpoint.counters();
    expect(counters.GetObject.requests + counters.ListObjectsV2.requests + counters.DeleteObject.requests).toBe(7);
    await cleanupOf(store)();
  });
});

describe("S3ObjectStore 5xx answers to conditional writes (an unknown outcome, resolved by read-back)", () => {
  it.each([500, 502, 503] as const)("a create answered %i after it landed is a success, never 'nothing written'", async (status) => {
    const store = endpointStore();
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommit: 1, errorAfterCommitStatus: status }]);
    endpoint.resetCounters();
    const created = await store.create("landed", bytes("mine"));
    const counters = endpoint.counters();
    expect([counters.PutObject.requests, counters.GetObject.requests]).toEqual([1, 1]);
    expect(expectBody(await store.get("landed"))).toEqual({ body: bytes("mine"), etag: created.etag });
    await cleanupOf(store)();
  });

  it.each([500, 502, 503] as const)("a casPut answered %i after it landed is a success with the new etag", async (status) => {
    const store = endpointStore();
    const { etag } = await store.create("cas", bytes("v1"));
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommit: 1, errorAfterCommitStatus: status }]);
    endpoint.resetCounters();
    const replaced = await store.casPut("cas", bytes("v2"), etag);
    expect(endpoint.counters().PutObject.requests).toBe(1);
    expect(expectBody(await store.get("cas"))).toEqual({ body: bytes("v2"), etag: replaced.etag });
    await cleanupOf(store)();
  });

  it("a create answered 500 that did not land, with another writer's object there, is CAS_CONFLICT", async () => {
    const store = endpointStore();
    await store.create("taken", bytes("theirs"));
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommit: 1 }]);
    endpoint.resetCounters();
    const error = await store.create("taken", bytes("mine")).catch((reason: unknown) => reason);
    expect(error).toMatchObject({ code: "CAS_CONFLICT", details: { readBack: "conflict" } });
    expect(endpoint.counters().PutObject.requests).toBe(1);
    expect(expectBody(await store.get("taken")).body).toEqual(bytes("theirs"));
    await cleanupOf(store)();
  });

  it("a casPut answered 500 that did not land, with another writer's object there, is STORE_AMBIGUOUS_OUTCOME", async () => {
    const store = endpointStore();
    const first = await store.create("cas", bytes("v1"));
    await store.casPut("cas", bytes("v2 theirs"), first.etag);
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommit: 1 }]);
    const error = await store.casPut("cas", bytes("v2 mine"), first.etag).catch((reason: unknown) => reason);
    // From the read-back alone, ours may have landed and been overwritten: the caller decides by nonce.
    expect(error).toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { readBack: "ambiguous" } });
    expect(isCasConflict(error)).toBe(false);
    expect(expectBody(await store.get("cas")).body).toEqual(bytes("v2 theirs"));
    await cleanupOf(store)();
  });

  it("reports STORE_AMBIGUOUS_OUTCOME, with the 5xx as its cause, when the read-back fails too", async () => {
    const store = endpointStore({ retryPolicy: QUICK_RETRIES });
    endpoint.faults.set([
      { operations: ["PutObject"], errorAfterCommit: 1 },
      { operations: ["GetObject"], error503Rate: 1 },
    ]);
    const error = await store.create("unknown", bytes("mine")).catch((reason: unknown) => reason);
    expect(error).toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { readBack: "STORE_TRANSIENT" } });
    expect((error as Error).cause).toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { failure: { status: 500 } } });
    endpoint.faults.clear();
    expect(expectBody(await store.get("unknown")).body).toEqual(bytes("mine"));
    await cleanupOf(store)();
  });

  it("takes a conflict on the repeat of an unknown create for what it is when the read-back finds our bytes", async () => {
    // The first attempt answers 500 without acting and the read-back finds nothing. While
    // the adapter waits out its backoff, the first request lands after all (a gateway that
    // delivered it late); the repeat then gets 412 — against our own write.
    const prefix = uniquePrefix();
    const backoff = new Gate();
    let sleeps = 0;
    const heldClock: Clock = {
      nowMs: () => Date.now(),
      monotonicMs: () => performance.now(),
      sleep: () => {
        sleeps += 1;
        return backoff.promise;
      },
      setTimer: systemClock.setTimer,
    };
    const store = endpointStore({ prefix, clock: heldClock });
    endpoint.faults.set([{ operations: ["PutObject"], error500Rate: 1 }]);
    endpoint.resetCounters();
    const outcome = store.create("late", bytes("mine"));
    await eventually(() => sleeps === 1);
    endpoint.faults.clear();
    const lateLanding = endpointStore({ prefix });
    await lateLanding.create("late", bytes("mine"));
    backoff.open();
    expect(await outcome).toEqual({ etag: etagOf(bytes("mine")) });
    const counters = endpoint.counters();
    // Ours (500), the late landing, our repeat (412); two read-backs.
    expect([counters.PutObject.requests, counters.GetObject.requests]).toEqual([3, 2]);
    await lateLanding.close();
    await cleanupOf(store)();
  });

  it.each([
    ["create, our bytes there", { kind: "create" }, { body: "mine", etag: "e1" }, "written"],
    ["create, key absent", { kind: "create" }, null, "repeat"],
    ["create, other bytes", { kind: "create" }, { body: "theirs", etag: "e1" }, "conflict"],
    ["casPut, our bytes there", { kind: "cas", etag: "e0" }, { body: "mine", etag: "e1" }, "written"],
    ["casPut, the etag we conditioned on", { kind: "cas", etag: "e0" }, { body: "before", etag: "e0" }, "repeat"],
    ["casPut, other bytes and etag", { kind: "cas", etag: "e0" }, { body: "theirs", etag: "e2" }, "ambiguous"],
    ["casPut, key absent", { kind: "cas", etag: "e0" }, null, "ambiguous"],
  ] as const)("read-back rule: %s → %s", (_label, condition, stored, verdict) => {
    const read = stored === null ? null : { body: bytes(stored.body), etag: stored.etag };
    expect(readBackVerdict(condition, read, bytes("mine"))).toBe(verdict);
  });
});

describe("S3ObjectStore transient answers", () => {
  it("retries bursts of 503 and 500 to success", async () => {
    const store = endpointStore();
    endpoint.faults.set([{ error503Rate: 0.25, error500Rate: 0.1 }]);
    endpoint.resetCounters();
    for (let index = 0; index < 10; index++) {
      const { etag } = await store.create(`k${index}`, bytes(`v${index}`));
      await store.casPut(`k${index}`, bytes(`w${index}`), etag);
      expect(expectBody(await store.get(`k${index}`)).body).toEqual(bytes(`w${index}`));
    }
    expect((await collect(store.list(""))).map((entry) => entry.key)).toHaveLength(10);
    const counters = endpoint.counters();
    // Some requests were refused and repeated: more requests than operations.
    expect(counters.PutObject.requests + counters.GetObject.requests).toBeGreaterThan(30);
    await cleanupOf(store)();
  });

  it("gives up after the attempt bound when 503s never stop: writes as unknown outcomes, reads as STORE_TRANSIENT", async () => {
    const store = endpointStore({ retryPolicy: QUICK_RETRIES });
    const { etag } = await store.create("k", bytes("v"));
    // Writes first: each 503 is read back (nothing landed), then repeated, up to the bound.
    // A gateway's 503 does not prove its backend will not still complete a write, so giving
    // up is an unknown outcome, never "nothing was written".
    endpoint.faults.set([{ operations: ["PutObject"], error503Rate: 1 }]);
    endpoint.resetCounters();
    await expect(store.create("new", bytes("v"))).rejects.toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { attempts: 6 } });
    expect([endpoint.counters().PutObject.requests, endpoint.counters().GetObject.requests]).toEqual([6, 6]);
    endpoint.resetCounters();
    await expect(store.casPut("k", bytes("w"), etag)).rejects.toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME", details: { attempts: 6 } });
    // Unknown etag form: every quoted attempt is answered 503, never 412, so none goes bare.
    expect([endpoint.counters().PutObject.requests, endpoint.counters().GetObject.requests]).toEqual([6, 6]);
    endpoint.faults.set([{ error503Rate: 1 }]);
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_TRANSIENT" });
    await expect(collect(store.list(""))).rejects.toMatchObject({ code: "STORE_TRANSIENT" });
    endpoint.faults.clear();
    expect(await store.get("new")).toBeNull();
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v"));
    await cleanupOf(store)();
  });

  it("treats a 409 ConditionalRequestConflict as a lost CAS, without retrying", async () => {
    const store = endpointStore();
    const { etag } = await store.create("k", bytes("v1"));
    endpoint.faults.set([{ operations: ["PutObject"], conflict409Rate: 1 }]);
    endpoint.resetCounters();
    await expect(store.casPut("k", bytes("v2"), etag)).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    expect(endpoint.counters().PutObject.requests).toBe(1);
    await cleanupOf(store)();
  });

  it("waits out R2's one-write-per-second 429 on a key", async () => {
    endpoint.setMode("r2");
    const store = endpointStore();
    endpoint.resetCounters();
    const first = await store.create("hot", bytes("v1"));
    const second = await store.casPut("hot", bytes("v2"), first.etag);
    await store.casPut("hot", bytes("v3"), second.etag);
    expect(expectBody(await store.get("hot")).body).toEqual(bytes("v3"));
    const puts = endpoint.counters().PutObject;
    // Each casPut came within a second of the previous write: refused (429), then repeated.
    expect(puts.errors).toBeGreaterThanOrEqual(2);
    expect(puts.requests).toBe(3 + puts.errors);
    await cleanupOf(store)();
  });
});

describe("S3ObjectStore deleteMany", () => {
  it("deletes more than 1000 keys in batches of at most 1000", async () => {
    const store = endpointStore();
    const keys = Array.from({ length: 1_050 }, (_, index) => `del/${index}`);
    await Promise.all(keys.slice(0, 40).map((key) => store.create(key, bytes(key))));
    endpoint.resetCounters();
    await store.deleteMany([...keys, "del/missing"]);
    expect(endpoint.counters().DeleteObjects.requests).toBe(2);
    expect(await collect(store.list("del/"))).toEqual([]);
    await cleanupOf(store)();
  });
});

describe("assertConditionalWrites per store flavour", () => {
  it("refuses a legacy MinIO that creates keys on If-Match", async () => {
    endpoint.setMode("legacy-minio");
    const store = endpointStore();
    const error = await assertConditionalWrites(store).catch((reason: unknown) => reason);
    expect(error).toMatchObject({ code: "STORE_NO_CONDITIONAL_WRITES", details: { step: "casPut on a missing key" } });
    expect((error as Error).message).toContain("casPut on a missing key");
    expect(await collect(store.list(PROBE_PREFIX))).toEqual([]);
    await cleanupOf(store)();
  });

  it("passes on R2 (412 on a missing key, 429 above one write per second)", async () => {
    endpoint.setMode("r2");
    const store = endpointStore();
    await assertConditionalWrites(store);
    expect(await collect(store.list(PROBE_PREFIX))).toEqual([]);
    await cleanupOf(store)();
  });
});

describe("S3ObjectStore If-Match etag form", () => {
  it("learns 'quoted' at the probe on AWS, and afterwards never sends a bare If-Match", async () => {
    const store = endpointStore();
    expect(store.ifMatchEtagForm).toBe("unknown");
    expect(await assertConditionalWrites(store)).toEqual({ ifMatchEtagForm: "quoted" });
    expect(store.ifMatchEtagForm).toBe("quoted");
    const { etag } = await store.create("k", bytes("v1"));
    endpoint.resetCounters();
    await expectConflict(store.casPut("k", bytes("v2"), "0123456789abcdef0123456789abcdef"));
    await expectConflict(store.casPut("missing", bytes("v2"), etag));
    await store.casPut("k", bytes("v2"), etag);
    // One request each: a 412 is final once the form is known.
    expect(endpoint.counters().PutObject.requests).toBe(3);
    await cleanupOf(store)();
  });

  it("while the form is unknown, repeats a casPut answered 412 once with the bare etag, and learns nothing from it", async () => {
    const store = endpointStore();
    const { etag } = await store.create("k", bytes("v1"));
    endpoint.resetCounters();
    await expectConflict(store.casPut("k", bytes("v2"), "0123456789abcdef0123456789abcdef"));
    expect(endpoint.counters().PutObject.requests).toBe(2);
    expect(store.ifMatchEtagForm).toBe("unknown");
    await store.casPut("k", bytes("v2"), etag);
    expect(store.ifMatchEtagForm).toBe("quoted");
    expect(endpoint.counters().PutObject.requests).toBe(3);
    await cleanupOf(store)();
  });

  it("learns 'bare' at the probe on radosgw, and its casPuts then cost one request", async () => {
    endpoint.setMode("radosgw");
    const store = endpointStore();
    expect(await assertConditionalWrites(store)).toEqual({ ifMatchEtagForm: "bare" });
    expect(store.ifMatchEtagForm).toBe("bare");
    const { etag } = await store.create("k", bytes("v1"));
    endpoint.resetCounters();
    const second = await store.casPut("k", bytes("v2"), etag);
    await expectConflict(store.casPut("k", bytes("v3"), etag));
    await expectConflict(store.casPut("missing", bytes("v3"), second.etag));
    expect(endpoint.counters().PutObject.requests).toBe(3);
    expect(expectBody(await store.get("k"))).toEqual({ body: bytes("v2"), etag: second.etag });
    await cleanupOf(store)();
  });

  it("refuses, at the probe, a pinned quoted form on radosgw with STORE_NO_CONDITIONAL_WRITES", async () => {
    endpoint.setMode("radosgw");
    const store = endpointStore({ ifMatchEtag: "quoted" });
    const error = await assertConditionalWrites(store).catch((reason: unknown) => reason);
    expect(error).toMatchObject({
      code: "STORE_NO_CONDITIONAL_WRITES",
      details: { step: "casPut with the right etag", ifMatchEtagForm: "quoted" },
    });
    expect((error as Error).message).toContain("If-Match etag form: quoted");
    expect(store.ifMatchEtagForm).toBe("quoted");
    expect(await collect(store.list(PROBE_PREFIX))).toEqual([]);
    await cleanupOf(store)();
  });

  it("honours a pinned bare form on AWS, which strips quotes either way", async () => {
    const store = endpointStore({ ifMatchEtag: "bare" });
    expect(await assertConditionalWrites(store)).toEqual({ ifMatchEtagForm: "bare" });
    await cleanupOf(store)();
  });

  it("refuses an unknown pinned form", () => {
    expect(() => endpointStore({ ifMatchEtag: "smart" as never })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});

/** A TCP port with nothing listening on it (bound once, then released). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
