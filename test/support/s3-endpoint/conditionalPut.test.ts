/**
 * Scenario: conditional PutObject through the real SDK, every row of the S3.md §1 table in
 * each mode (aws, r2, legacy-minio, and radosgw as radosgw 16.2.15 answered the same
 * rows), then races: 8 concurrent If-Match writers with the same etag and 8 concurrent
 * create-only writers must produce exactly one winner, an injected 409 must change
 * nothing, r2 mode must answer 429 to a second write within a second, radosgw's losers of
 * a race may answer 500 while a stale etag keeps its 412, and radosgw refuses aws-chunked
 * uploads with a trailer with 411.
 */
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etagOf } from "./etags.js";
import { S3_ENDPOINT_MODES, s3ClientConfigFor, startS3Endpoint, type S3Endpoint, type S3EndpointMode } from "./index.js";

interface Outcome {
  readonly status: number;
  readonly code?: string;
  readonly condition?: string;
}

/** The HTTP status (and S3 code) of an SDK call, without throwing on S3 errors. */
async function outcomeOf(call: Promise<{ $metadata: { httpStatusCode?: number } }>): Promise<Outcome> {
  try {
    return { status: (await call).$metadata.httpStatusCode ?? 0 };
  } catch (error) {
    const failure = error as { name: string; Condition?: string; $metadata?: { httpStatusCode?: number } };
    if (failure.$metadata?.httpStatusCode === undefined) throw error;
    const result: Outcome = { status: failure.$metadata.httpStatusCode, code: failure.name };
    return failure.Condition === undefined ? result : { ...result, condition: failure.Condition };
  }
}

const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString());

type Stored = "written" | "unchanged" | "absent";
interface Expected extends Outcome {
  readonly stored: Stored;
}
interface Row {
  readonly label: string;
  readonly present: boolean;
  /** Builds the headers from the etag of the existing body ("before"). */
  readonly conditions: (etag: string) => { IfMatch?: string; IfNoneMatch?: string };
  readonly expected: Readonly<Record<S3EndpointMode, Expected>>;
}

const ok: Expected = { status: 200, stored: "written" };
const notImplemented: Expected = { status: 501, code: "NotImplemented", stored: "unchanged" };
const failedIfMatch = (stored: Stored): Expected => ({ status: 412, code: "PreconditionFailed", condition: "If-Match", stored });
const failedIfNoneMatch: Expected = {
  status: 412,
  code: "PreconditionFailed",
  condition: "If-None-Match",
  stored: "unchanged",
};
/** radosgw's 412 names no condition. */
const radosgw412 = (stored: Stored): Expected => ({ status: 412, code: "PreconditionFailed", stored });
const same = (expected: Expected): Record<S3EndpointMode, Expected> => ({
  aws: expected,
  r2: expected,
  "legacy-minio": expected,
  radosgw: expected,
});

const ROWS: readonly Row[] = [
  { label: "If-None-Match: * on a missing key", present: false, conditions: () => ({ IfNoneMatch: "*" }), expected: same(ok) },
  {
    label: "If-None-Match: * on an existing key",
    present: true,
    conditions: () => ({ IfNoneMatch: "*" }),
    expected: { ...same(failedIfNoneMatch), radosgw: radosgw412("unchanged") },
  },
  {
    label: "If-Match with the current etag",
    present: true,
    conditions: (etag) => ({ IfMatch: `"${etag}"` }),
    // radosgw compares the quotes too, so the quoted current etag never matches there.
    expected: { ...same(ok), radosgw: radosgw412("unchanged") },
  },
  { label: "If-Match with the current etag, bare", present: true, conditions: (etag) => ({ IfMatch: etag }), expected: same(ok) },
  {
    label: "If-Match with another etag",
    present: true,
    conditions: () => ({ IfMatch: `"${etagOf(Buffer.from("other"))}"` }),
    expected: { ...same(failedIfMatch("unchanged")), radosgw: radosgw412("unchanged") },
  },
  {
    label: "If-Match on a missing key",
    present: false,
    conditions: (etag) => ({ IfMatch: `"${etag}"` }),
    expected: {
      aws: { status: 404, code: "NoSuchKey", stored: "absent" },
      r2: failedIfMatch("absent"),
      "legacy-minio": ok,
      radosgw: radosgw412("absent"),
    },
  },
  {
    label: "If-None-Match: <current etag>",
    present: true,
    conditions: (etag) => ({ IfNoneMatch: `"${etag}"` }),
    // radosgw: the quoted etag does not equal the stored one, so the write happens.
    expected: { aws: notImplemented, r2: failedIfNoneMatch, "legacy-minio": failedIfNoneMatch, radosgw: ok },
  },
  {
    label: "If-None-Match: <current etag, bare>",
    present: true,
    conditions: (etag) => ({ IfNoneMatch: etag }),
    expected: { aws: notImplemented, r2: failedIfNoneMatch, "legacy-minio": failedIfNoneMatch, radosgw: radosgw412("unchanged") },
  },
  {
    label: "If-None-Match: <another etag>",
    present: true,
    conditions: () => ({ IfNoneMatch: `"${etagOf(Buffer.from("other"))}"` }),
    expected: { aws: notImplemented, r2: ok, "legacy-minio": ok, radosgw: ok },
  },
  {
    label: "If-Match: * on an existing key",
    present: true,
    conditions: () => ({ IfMatch: "*" }),
    expected: { aws: notImplemented, r2: ok, "legacy-minio": ok, radosgw: ok },
  },
  {
    label: "If-Match: * on a missing key",
    present: false,
    conditions: () => ({ IfMatch: "*" }),
    expected: {
      aws: { ...notImplemented, stored: "absent" },
      r2: failedIfMatch("absent"),
      "legacy-minio": ok,
      radosgw: radosgw412("absent"),
    },
  },
  {
    label: "both headers",
    present: true,
    conditions: (etag) => ({ IfMatch: `"${etag}"`, IfNoneMatch: "*" }),
    expected: { aws: notImplemented, r2: failedIfNoneMatch, "legacy-minio": failedIfNoneMatch, radosgw: radosgw412("unchanged") },
  },
];

const BEFORE = Buffer.from("before");
const BEFORE_ETAG = etagOf(BEFORE);

for (const mode of S3_ENDPOINT_MODES) {
  describe(`conditional PutObject table in ${mode} mode`, () => {
    let endpoint: S3Endpoint;
    let client: S3Client;
    const outcomes = new Map<number, Outcome>();

    beforeAll(async () => {
      endpoint = await startS3Endpoint({ mode });
      client = new S3Client({ ...s3ClientConfigFor(endpoint), maxAttempts: 1 });
      for (const [index, row] of ROWS.entries()) {
        if (row.present) await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: `row-${index}`, Body: BEFORE }));
      }
      // R2 refuses a second write to a key within a second; let the fixtures age past it.
      if (mode === "r2") await sleep(1100);
      for (const [index, row] of ROWS.entries()) {
        const command = new PutObjectCommand({
          Bucket: endpoint.bucket,
          Key: `row-${index}`,
          Body: `after-${index}`,
          ...row.conditions(BEFORE_ETAG),
        });
        outcomes.set(index, await outcomeOf(client.send(command)));
      }
    });

    afterAll(async () => {
      client.destroy();
      await endpoint.close();
    });

    it.each(ROWS.map((row, index) => [row.label, index] as const))("%s", (_label, index) => {
      const row = ROWS[index] as Row;
      const { stored, ...expectedOutcome } = row.expected[mode];
      expect(outcomes.get(index)).toEqual(expectedOutcome);
      const body = text(endpoint.peek(endpoint.bucket, `row-${index}`));
      const expectedBody = { written: `after-${index}`, unchanged: row.present ? "before" : undefined, absent: undefined }[stored];
      expect(body).toBe(expectedBody);
    });

    if (mode === "r2") {
      it("answers 429 to a second write of a key within a second, and only for that key", async () => {
        // row-2 was written moments ago by the table above.
        const again = await outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "row-2", Body: "again" })));
        expect(again).toEqual({ status: 429, code: "TooManyRequests" });
        expect(text(endpoint.peek(endpoint.bucket, "row-2"))).toBe("after-2");
        const fresh = await outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "fresh", Body: "x" })));
        expect(fresh.status).toBe(200);
      });
    }
  });
}

describe("conditional PutObject races and injected conflicts", () => {
  let endpoint: S3Endpoint;
  let client: S3Client;

  beforeAll(async () => {
    endpoint = await startS3Endpoint();
    client = new S3Client({ ...s3ClientConfigFor(endpoint), maxAttempts: 1 });
  });

  afterAll(async () => {
    client.destroy();
    await endpoint.close();
  });

  it("lets exactly one of 8 concurrent If-Match writers win, the others get 412", async () => {
    const first = await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "race", Body: "v0" }));
    // Jitter reorders arrivals; it is applied before the atomic check-and-write.
    endpoint.faults.set([{ operations: ["PutObject"], jitterMs: 20 }]);
    const bodies = Array.from({ length: 8 }, (_, index) => `racer-${index}`);
    const outcomes = await Promise.all(
      bodies.map((body) =>
        outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "race", Body: body, IfMatch: first.ETag }))),
      ),
    );
    endpoint.faults.clear();
    const winners = outcomes.flatMap((outcome, index) => (outcome.status === 200 ? [index] : []));
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.status === 412 && outcome.condition === "If-Match")).toHaveLength(7);
    expect(text(endpoint.peek(endpoint.bucket, "race"))).toBe(bodies[winners[0] as number]);
  });

  it("lets exactly one of 8 concurrent create-only writers win", async () => {
    endpoint.faults.set([{ operations: ["PutObject"], jitterMs: 20 }]);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "create-race", Body: `c${index}`, IfNoneMatch: "*" }))),
      ),
    );
    endpoint.faults.clear();
    expect(outcomes.filter((outcome) => outcome.status === 200)).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.status === 412)).toHaveLength(7);
  });

  it("answers an injected 409 to conditional PUTs only, without writing", async () => {
    const first = await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "conflict", Body: "v1" }));
    endpoint.faults.set([{ conflict409Rate: 1 }]);
    const conditional = await outcomeOf(
      client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "conflict", Body: "v2", IfMatch: first.ETag })),
    );
    expect(conditional).toEqual({ status: 409, code: "ConditionalRequestConflict" });
    expect(text(endpoint.peek(endpoint.bucket, "conflict"))).toBe("v1");
    const plain = await outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "conflict", Body: "v3" })));
    expect(plain.status).toBe(200);
    endpoint.faults.clear();
  });

  it("switches behaviour with setMode: legacy-minio creates a missing key on If-Match", async () => {
    const missing = { Bucket: endpoint.bucket, Key: "mode-switch", Body: "x", IfMatch: `"${BEFORE_ETAG}"` };
    expect((await outcomeOf(client.send(new PutObjectCommand(missing)))).status).toBe(404);
    endpoint.setMode("legacy-minio");
    expect((await outcomeOf(client.send(new PutObjectCommand(missing)))).status).toBe(200);
    expect(text(endpoint.peek(endpoint.bucket, "mode-switch"))).toBe("x");
    endpoint.setMode("aws");
    expect(() => endpoint.setMode("gcs" as S3EndpointMode)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});

describe("radosgw mode's other answers", () => {
  let endpoint: S3Endpoint;
  let client: S3Client;

  beforeAll(async () => {
    endpoint = await startS3Endpoint({ mode: "radosgw" });
    client = new S3Client({ ...s3ClientConfigFor(endpoint), maxAttempts: 1 });
  });

  afterAll(async () => {
    client.destroy();
    await endpoint.close();
  });

  it("answers losers of a race of bare If-Match writers 500 under lostRace500Rate, and a stale etag still 412", async () => {
    const first = await client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "race", Body: "v0" }));
    const bare = (first.ETag ?? "").replaceAll('"', "");
    endpoint.faults.set([{ operations: ["PutObject"], lostRace500Rate: 1 }]);
    // All eight are held after they arrived, while their condition still held.
    endpoint.faults.pause({ operations: ["PutObject"] });
    const bodies = Array.from({ length: 8 }, (_, index) => `racer-${index}`);
    const racing = Promise.all(
      bodies.map((body) =>
        outcomeOf(client.send(new PutObjectCommand({ Bucket: endpoint.bucket, Key: "race", Body: body, IfMatch: bare }))),
      ),
    );
    for (let poll = 0; poll < 2000 && endpoint.faults.heldRequests < 8; poll++) await sleep(5);
    expect(endpoint.faults.heldRequests).toBe(8);
    endpoint.faults.release();
    const outcomes = await racing;
    const winners = outcomes.flatMap((outcome, index) => (outcome.status === 200 ? [index] : []));
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.status === 500)).toHaveLength(7);
    expect(text(endpoint.peek(endpoint.bucket, "race"))).toBe(bodies[winners[0] as number]);
    // The same etag again is stale on arrival: no race lost, the answer stays 412.
    const late = new PutObjectCommand({ Bucket: endpoint.bucket, Key: "race", Body: "late", IfMatch: bare });
    const stale = await outcomeOf(client.send(late));
    expect(stale).toEqual({ status: 412, code: "PreconditionFailed" });
    endpoint.faults.clear();
  });

  it("refuses an aws-chunked upload with a trailer with 411, and takes the same body buffered", async () => {
    const body = Readable.from([Buffer.from("hello world")]);
    const stream = new PutObjectCommand({ Bucket: endpoint.bucket, Key: "streamed", Body: body, ContentLength: 11 });
    const streamed = await outcomeOf(client.send(stream));
    expect(streamed).toEqual({ status: 411, code: "MissingContentLength" });
    expect(endpoint.peek(endpoint.bucket, "streamed")).toBeUndefined();
    const buffer = new PutObjectCommand({ Bucket: endpoint.bucket, Key: "streamed", Body: Buffer.from("hello world") });
    const buffered = await outcomeOf(client.send(buffer));
    expect(buffered.status).toBe(200);
  });
});
