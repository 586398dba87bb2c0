/**
 * Scenario: the S3 adapter over real HTTP, real SigV4 and the real AWS SDK, against the
 * S3 test endpoint (test/support/s3-endpoint): the contract suite with the SDK's default
 * checksums and with checksums=when_required, then the S3-specific duties — refusing
 * wrong credentials, missing buckets and dead endpoints at open; reporting a write whose
 * answer was lost as an ambiguous outcome (and never letting the SDK retry it); retrying
 * 503/500/429 answers and giving up with STORE_TRANSIENT; DeleteObjects in batches; and
 * the conditional-write probe per store flavour. When CAIRN_TEST_S3_URL is set, the
 * contract suite also runs against that real store.
 */
import { createServer, type AddressInfo, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/base/clock.js";
import { isCasConflict } from "../../src/base/errors.js";
import { assertConditionalWrites, PROBE_PREFIX } from "../../src/objectstore/assertConditionalWrites.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { openObjectStore } from "../../src/objectstore/openObjectStore.js";
import type { RetryPolicy } from "../../src/objectstore/retry.js";
import { S3ObjectStore, type S3ObjectStoreOptions } from "../../src/objectstore/S3ObjectStore.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import { bytes, collect, defineObjectStoreConformance, emptyStore, expectBody, type StoreFactory } from "./conformance.js";

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

const realStoreUrl = process.env.CAIRN_TEST_S3_URL;

describe("S3ObjectStore → CAIRN_TEST_S3_URL (a real MinIO, S3 or R2)", () => {
  it.skipIf(realStoreUrl === undefined)(
    "is configured — skipped unless CAIRN_TEST_S3_URL='s3://bucket/prefix?endpoint=…&region=…' and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are set (see README: Object stores)",
    async () => {
      const store = await openObjectStore(realStoreUrl as string);
      await store.close();
    },
  );
  if (realStoreUrl !== undefined) defineObjectStoreConformance(`S3 at ${realStoreUrl}`, realStoreFactory(realStoreUrl));
});

/** Each test gets its own prefix under the URL's prefix, opened the way the CLI opens it. */
function realStoreFactory(url: string): StoreFactory {
  const runId = `${Date.now().toString(36)}-${process.pid}`;
  return async () => {
    const parsed = new URL(url);
    const basePath = parsed.pathname.endsWith("/") ? parsed.pathname : `${parsed.pathname}/`;
    parsed.pathname = `${basePath}conformance-${runId}/${uniquePrefix()}`;
    const store = await openObjectStore(parsed.toString());
    return {
      store,
      cleanup: async () => {
        await emptyStore(store);
        await store.close();
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
    const fastClock: Clock = { nowMs: () => Date.now(), monotonicMs: () => performance.now(), sleep: (ms, signal) => systemClock.sleep(ms / 50, signal) };
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
  it("reports a create whose answer was dropped as STORE_AMBIGUOUS_OUTCOME, sent once, and stored", async () => {
    const store = endpointStore();
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    endpoint.resetCounters();
    await expect(store.create("dropped", bytes("mine"))).rejects.toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME" });
    expect(endpoint.counters().PutObject.requests).toBe(1);
    endpoint.faults.clear();
    expect(expectBody(await store.get("dropped")).body).toEqual(bytes("mine"));
    await cleanupOf(store)();
  });

  it("reports a casPut whose answer was dropped as STORE_AMBIGUOUS_OUTCOME, and the new body is stored", async () => {
    const store = endpointStore();
    const { etag } = await store.create("cas", bytes("v1"));
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    const error = await store.casPut("cas", bytes("v2"), etag).catch((reason: unknown) => reason);
    expect(error).toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME" });
    expect(isCasConflict(error)).toBe(false);
    endpoint.faults.clear();
    expect(expectBody(await store.get("cas")).body).toEqual(bytes("v2"));
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

  it("gives up with STORE_TRANSIENT after the attempt bound when 503s never stop", async () => {
    const store = endpointStore({ retryPolicy: QUICK_RETRIES });
    await store.create("k", bytes("v"));
    endpoint.faults.set([{ error503Rate: 1 }]);
    endpoint.resetCounters();
    await expect(store.create("new", bytes("v"))).rejects.toMatchObject({ code: "STORE_TRANSIENT", details: { attempts: 6 } });
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_TRANSIENT" });
    await expect(collect(store.list(""))).rejects.toMatchObject({ code: "STORE_TRANSIENT" });
    expect(endpoint.counters().PutObject.requests).toBe(QUICK_RETRIES.attemptsMax);
    endpoint.faults.clear();
    expect(await store.get("new")).toBeNull();
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

/** A TCP port with nothing listening on it (bound once, then released). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
