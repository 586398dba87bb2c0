/**
 * Scenario: conditional PutObject through the real SDK, every row of the S3.md §1 table in
 * each mode (aws, r2, legacy-minio), then races: 8 concurrent If-Match writers with the
 * same etag and 8 concurrent create-only writers must produce exactly one winner, an
 * injected 409 must change nothing, and r2 mode must answer 429 to a second write within a
 * second.
 */
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etagOf } from "./etags.js";
import { s3ClientConfigFor, startS3Endpoint, type S3Endpoint, type S3EndpointMode } from "./index.js";

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
const same = (expected: Expected): Record<S3EndpointMode, Expected> => ({ aws: expected, r2: expected, "legacy-minio": expected });

const ROWS: readonly Row[] = [
  { label: "If-None-Match: * on a missing key", present: false, conditions: () => ({ IfNoneMatch: "*" }), expected: same(ok) },
  {
    label: "If-None-Match: * on an existing key",
    present: true,
    conditions: () => ({ IfNoneMatch: "*" }),
    expected: same(failedIfNoneMatch),
  },
  { label: "If-Match with the current etag", present: true, conditions: (etag) => ({ IfMatch: `"${etag}"` }), expected: same(ok) },
  {
    label: "If-Match with another etag",
    present: true,
    conditions: () => ({ IfMatch: `"${etagOf(Buffer.from("other"))}"` }),
    expected: same(failedIfMatch("unchanged")),
  },
  {
    label: "If-Match on a missing key",
    present: false,
    conditions: (etag) => ({ IfMatch: `"${etag}"` }),
    expected: {
      aws: { status: 404, code: "NoSuchKey", stored: "absent" },
      r2: failedIfMatch("absent"),
      "legacy-minio": ok,
    },
  },
  {
    label: "If-None-Match: <current etag>",
    present: true,
    conditions: (etag) => ({ IfNoneMatch: `"${etag}"` }),
    expected: { aws: notImplemented, r2: failedIfNoneMatch, "legacy-minio": failedIfNoneMatch },
  },
  {
    label: "If-None-Match: <another etag>",
    present: true,
    conditions: () => ({ IfNoneMatch: `"${etagOf(Buffer.from("other"))}"` }),
    expected: { aws: notImplemented, r2: ok, "legacy-minio": ok },
  },
  {
    label: "If-Match: * on an existing key",
    present: true,
    conditions: () => ({ IfMatch: "*" }),
    expected: { aws: notImplemented, r2: ok, "legacy-minio": ok },
  },
  {
    label: "If-Match: * on a missing key",
    present: false,
    conditions: () => ({ IfMatch: "*" }),
    expected: { aws: { ...notImplemented, stored: "absent" }, r2: failedIfMatch("absent"), "legacy-minio": ok },
  },
  {
    label: "both headers",
    present: true,
    conditions: (etag) => ({ IfMatch: `"${etag}"`, IfNoneMatch: "*" }),
    expected: { aws: notImplemented, r2: failedIfNoneMatch, "legacy-minio": failedIfNoneMatch },
  },
];

const BEFORE = Buffer.from("before");
const BEFORE_ETAG = etagOf(BEFORE);

for (const mode of ["aws", "r2", "legacy-minio"] as const) {
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
