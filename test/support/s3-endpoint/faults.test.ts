/**
 * Scenario: fault injection and counters as tests and benchmarks use them. Seeded 503s
 * that the SDK's own retries get through; 500s and filters by operation and key pattern;
 * commit-then-drop that stores the object while the client sees a socket error (and the
 * SDK-retry ambiguity of S3.md §3 it causes); commit-then-5xx that stores the object while
 * the client sees 500, 502 (a proxy's HTML page) or 503; pause/release, a held client that
 * gives up, and close() releasing held requests; identical decisions for identical seeds;
 * request, byte, error and dollar counts.
 */
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, DeleteObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { REQUEST_PRICE_DOLLARS, s3ClientConfigFor, startS3Endpoint, type S3Endpoint } from "./index.js";

let endpoint: S3Endpoint;
const clients: S3Client[] = [];

function clientFor(target: S3Endpoint, overrides: Partial<ConstructorParameters<typeof S3Client>[0]> = {}): S3Client {
  const client = new S3Client({ ...s3ClientConfigFor(target), requestChecksumCalculation: "WHEN_REQUIRED", ...overrides });
  clients.push(client);
  return client;
}

/** Polls until the condition holds; the bound only keeps a broken test from hanging. */
async function until(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 2000 && !condition(); attempt++) await sleep(5);
  expect(condition()).toBe(true);
}

async function statusOf(call: Promise<{ $metadata: { httpStatusCode?: number } }>): Promise<number | string> {
  try {
    return (await call).$metadata.httpStatusCode ?? 0;
  } catch (error) {
    const failure = error as { name: string; $metadata?: { httpStatusCode?: number } };
    return failure.$metadata?.httpStatusCode ?? `no answer (${failure.name})`;
  }
}

const put = (client: S3Client, key: string, body = "x", extra: { IfNoneMatch?: string } = {}) =>
  client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: key, Body: body, ...extra }));
const stored = (key: string) => {
  const body = endpoint.peek(endpoint.bucket, key);
  return body === undefined ? undefined : Buffer.from(body).toString();
};

beforeAll(async () => {
  endpoint = await startS3Endpoint({ seed: 7 });
});

afterEach(() => {
  endpoint.faults.clear();
  endpoint.faults.release();
});

afterAll(async () => {
  for (const client of clients) client.destroy();
  await endpoint.close();
});

describe("injected errors", () => {
  it("answers seeded 503 SlowDown that the SDK's retries get through", async () => {
    const client = clientFor(endpoint, { maxAttempts: 6 });
    endpoint.resetCounters();
    endpoint.faults.set([{ operations: ["PutObject"], error503Rate: 0.5 }]);
    const attempts: number[] = [];
    for (let index = 0; index < 20 && !attempts.some((count) => count > 1); index++) {
      const result = await put(client, `retried/${index}`, `body-${index}`);
      attempts.push(result.$metadata.attempts ?? 0);
      expect(stored(`retried/${index}`)).toBe(`body-${index}`);
    }
    expect(attempts.some((count) => count > 1)).toBe(true);
    const counted = endpoint.counters().PutObject;
    expect(counted.requests).toBe(attempts.reduce((sum, count) => sum + count, 0));
    expect(counted.errors).toBe(attempts.reduce((sum, count) => sum + count - 1, 0));
  });

  it("answers 500 InternalError without acting, only for the matching operation and keys", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.faults.set([{ keyPattern: /^flaky\//g, error500Rate: 1 }]);
    expect(await statusOf(put(client, "flaky/a"))).toBe(500);
    expect(await statusOf(put(client, "flaky/a"))).toBe(500);
    expect(stored("flaky/a")).toBeUndefined();
    expect(await statusOf(put(client, "steady/a"))).toBe(200);
    expect(await statusOf(client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket })))).toBe(200);

    endpoint.faults.set([{ operations: ["GetObject"], error500Rate: 1 }, { latencyMs: 20, jitterMs: 10 }]);
    expect(await statusOf(put(client, "steady/b"))).toBe(200);
    expect(await statusOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "steady/b" })))).toBe(500);
  });

  it("makes the same decisions for the same seed and rules", async () => {
    const sequence = async (seed: number) => {
      const own = await startS3Endpoint({ seed });
      const client = clientFor(own, { maxAttempts: 1 });
      own.faults.set([{ error500Rate: 0.5 }]);
      const statuses: (number | string)[] = [];
      for (let index = 0; index < 24; index++) {
        statuses.push(await statusOf(client.send(new PutObjectCommand({ Bucket: own.bucket, Key: `s${index}`, Body: "x" }))));
      }
      await own.close();
      return statuses;
    };
    const first = await sequence(42);
    expect(await sequence(42)).toEqual(first);
    expect(first).toContain(500);
    expect(first).toContain(200);
    expect(await sequence(43)).not.toEqual(first);
  });

  it("refuses invalid rules with a typed error and keeps the active ones", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.faults.set([{ operations: ["PutObject"], error500Rate: 1 }]);
    expect(() => endpoint.faults.set([{ error503Rate: 2 }])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => endpoint.faults.set([{ error503rate: 1 } as never])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => endpoint.faults.set([{ operations: ["CopyObject" as never] }])).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    expect(() => endpoint.faults.set([{ dropAfterCommit: 1.5 }])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => endpoint.faults.set([{ errorAfterCommit: -1 }])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => endpoint.faults.set([{ errorAfterCommitStatus: 504 as never }])).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    expect(() => endpoint.faults.set([{ lostRace500Rate: -0.5 }])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(await statusOf(put(client, "still-failing"))).toBe(500);
  });
});

describe("commit then drop", () => {
  it("stores the object while the client sees a socket error, for exactly `count` requests", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.resetCounters();
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    const dropped = await statusOf(put(client, "dropped", "landed"));
    expect(dropped).toMatch(/^no answer/);
    expect(stored("dropped")).toBe("landed");
    expect(await statusOf(put(client, "dropped-next", "fine"))).toBe(200);
    expect(endpoint.counters().PutObject).toMatchObject({ requests: 2, errors: 1 });
  });

  it("reproduces the ambiguous outcome: an SDK retry of a landed create-only PUT gets 412", async () => {
    const client = clientFor(endpoint, { maxAttempts: 3 });
    endpoint.faults.set([{ operations: ["PutObject"], dropAfterCommit: 1 }]);
    try {
      await put(client, "ambiguous", "mine", { IfNoneMatch: "*" });
      expect.unreachable("the retried create-only PUT should fail");
    } catch (error) {
      const failure = error as { $metadata: { httpStatusCode?: number; attempts?: number } };
      expect([failure.$metadata.httpStatusCode, failure.$metadata.attempts]).toEqual([412, 2]);
    }
    expect(stored("ambiguous")).toBe("mine");
  });
});

describe("commit then answer a 5xx", () => {
  it.each([500, 502, 503] as const)("stores the object and answers %i, for exactly `count` requests", async (status) => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.resetCounters();
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommit: 1, errorAfterCommitStatus: status }]);
    expect(await statusOf(put(client, `answered-${status}`, "landed"))).toBe(status);
    expect(stored(`answered-${status}`)).toBe("landed");
    expect(await statusOf(put(client, `answered-${status}-next`, "fine"))).toBe(200);
    expect(endpoint.counters().PutObject).toMatchObject({ requests: 2, errors: 1 });
  });

  it("answers the 5xx also when the operation was refused, which leaves the object as it was", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    await put(client, "taken", "first");
    endpoint.faults.set([{ operations: ["PutObject"], errorAfterCommitRate: 1 }]);
    expect(await statusOf(put(client, "taken", "second", { IfNoneMatch: "*" }))).toBe(500);
    expect(stored("taken")).toBe("first");
  });
});

describe("pause", () => {
  it("holds matching requests until release while others pass", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    await put(client, "held", "held-body");
    endpoint.faults.pause({ operations: ["GetObject"], keyPattern: /^held$/ });
    const get = client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "held" }));
    await until(() => endpoint.faults.heldRequests === 1);
    expect(await statusOf(put(client, "not-held"))).toBe(200);
    expect(await statusOf(client.send(new HeadObjectCommand({ Bucket: endpoint.bucket, Key: "held" })))).toBe(200);
    expect(endpoint.faults.heldRequests).toBe(1);
    endpoint.faults.release();
    expect(await (await get).Body!.transformToString()).toBe("held-body");
    expect(endpoint.faults.heldRequests).toBe(0);
  });

  it("forgets a held request whose client gives up", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.faults.pause();
    const abort = new AbortController();
    const get = statusOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "held" }), { abortSignal: abort.signal }));
    await until(() => endpoint.faults.heldRequests === 1);
    abort.abort();
    expect(await get).toMatch(/^no answer/);
    await until(() => endpoint.faults.heldRequests === 0);
  });

  it("releases held requests with an error on close()", async () => {
    const own = await startS3Endpoint();
    const client = clientFor(own, { maxAttempts: 1 });
    own.faults.pause({ operations: ["PutObject"] });
    const pending = statusOf(client.send(new PutObjectCommand({ Bucket: own.bucket, Key: "never", Body: "x" })));
    await until(() => own.faults.heldRequests === 1);
    await own.close();
    expect(await pending).toMatch(/^no answer/);
    expect(own.faults.heldRequests).toBe(0);
    expect(own.peek(own.bucket, "never")).toBeUndefined();
  });
});

describe("counters", () => {
  it("counts requests, bytes and errors per operation, and prices them", async () => {
    const client = clientFor(endpoint, { maxAttempts: 1 });
    endpoint.resetCounters();
    for (const key of ["c/1", "c/2", "c/3"]) await put(client, key, "ten bytes!");
    for (const key of ["c/1", "c/2"]) {
      await (await client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: key }))).Body!.transformToString();
    }
    expect(await statusOf(client.send(new GetObjectCommand({ Bucket: endpoint.bucket, Key: "c/missing" })))).toBe(404);
    await client.send(new HeadObjectCommand({ Bucket: endpoint.bucket, Key: "c/1" }));
    await client.send(new DeleteObjectCommand({ Bucket: endpoint.bucket, Key: "c/3" }));
    await client.send(new ListObjectsV2Command({ Bucket: endpoint.bucket, Prefix: "c/" }));

    const counted = endpoint.counters();
    expect(counted.PutObject).toEqual({ requests: 3, bytesIn: 30, bytesOut: 0, errors: 0 });
    expect(counted.GetObject).toMatchObject({ requests: 3, bytesIn: 0, errors: 1 });
    expect(counted.GetObject.bytesOut).toBeGreaterThan(20);
    expect(counted.HeadObject).toEqual({ requests: 1, bytesIn: 0, bytesOut: 0, errors: 0 });
    expect(counted.DeleteObject).toEqual({ requests: 1, bytesIn: 0, bytesOut: 0, errors: 0 });
    expect(counted.ListObjectsV2.requests).toBe(1);
    const expectedDollars =
      3 * REQUEST_PRICE_DOLLARS.PutObject + REQUEST_PRICE_DOLLARS.ListObjectsV2 + 3 * REQUEST_PRICE_DOLLARS.GetObject + REQUEST_PRICE_DOLLARS.HeadObject;
    expect(endpoint.costDollars()).toBeCloseTo(expectedDollars, 12);
    expect(expectedDollars).toBeCloseTo((4 * 0.005 + 4 * 0.0004) / 1000, 12);

    await put(client, "c/after");
    expect(counted.PutObject.requests).toBe(3);
    endpoint.resetCounters();
    expect(endpoint.counters().PutObject).toEqual({ requests: 0, bytesIn: 0, bytesOut: 0, errors: 0 });
    expect(endpoint.costDollars()).toBe(0);
  });
});
