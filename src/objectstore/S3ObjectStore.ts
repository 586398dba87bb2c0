import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import {
  systemClock,
  type Clock,
  CairnError,
  hasErrorCode,
  invalidArgument,
  isCasConflict,
  isStoreTransient,
  DELETE_BATCH_KEYS_MAX,
  LIST_PAGE_KEYS_MAX,
  STORE_CONNECT_TIMEOUT_MS,
  STORE_OPEN_ANSWER_TIMEOUT_MS,
  STORE_KEY_BYTES_MAX,
  STORE_SOCKET_IDLE_TIMEOUT_MS,
  STORE_SOCKETS_MAX,
  systemRandom,
  type Random,
} from "../base/index.js";
import { assertValidKey } from "./keys.js";
import type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";
import { defaultRetryPolicy, retryTransient, type RetryPolicy } from "./retry.js";
import { answeredStatusOf, classifyS3Failure, storeErrorFor, type S3Call, type S3CallKind } from "./s3Failures.js";

/**
 * The ObjectStore contract on S3 and S3-compatible stores (AWS, R2, MinIO, Ceph radosgw),
 * through @aws-sdk/client-s3 v3. The only module in src/ that knows the AWS SDK.
 *
 * Invariants:
 * - The SDK never retries (`maxAttempts: 1`): an SDK retry of a conditional write that
 *   landed turns its success into a 412. All retries happen here, bounded by the retry
 *   policy (attempts and backoff), whatever the reason for repeating.
 * - A conditional write is repeated only when an answer (s3Failures decides which) or a
 *   read-back proves that it did not land. Every outcome left unknown — a 5xx, a
 *   connection that broke after the request was sent, a 2xx whose answer is unreadable —
 *   is resolved by reading the key back before giving up:
 *     our exact bytes there                          → success, with the etag read;
 *     create, key absent                             → repeat (create-only is safe to repeat);
 *     create, other bytes                            → CAS_CONFLICT;
 *     casPut, the etag we conditioned on still there → repeat (at most one write
 *                                                      conditioned on that etag can land,
 *                                                      and a repeat sends the same bytes);
 *     casPut, anything else                          → STORE_AMBIGUOUS_OUTCOME (ours may
 *                                                      have landed and been overwritten);
 *     the read-back fails                            → STORE_AMBIGUOUS_OUTCOME.
 *   A conflict answered to a repeat is resolved the same way: it may be our earlier write.
 *   This is sound only because Cairn never writes the same bytes to a key twice (see the
 *   ObjectStore contract): "our bytes" cannot be someone else's.
 * - If-Match etag form (`ifMatchEtagForm`): AWS, R2 and MinIO strip the quotes of
 *   If-Match; radosgw 16 compares the header verbatim with its unquoted etag, so a quoted
 *   one never matches there. A form pinned by the `ifMatchEtag` option never changes.
 *   Unknown, casPut sends the quoted etag and, when the answer is 412 while the form is
 *   still unknown, repeats the same casPut once with the bare etag: the same etag value,
 *   so the condition is identical. The first form answered with a 2xx is fixed for the
 *   store's lifetime; after that a 412 is final. A 412 never teaches a form (it answers a
 *   stale etag as well as an unreadable one), so every write stays conditioned on the
 *   full etag in a form the store has accepted: the check is never weaker than the store's.
 *   assertConditionalWrites, run at open by `cairn serve`, performs a casPut with the
 *   right etag, so the form is learned there, once.
 * - Every key is sent as `prefix + key`; every key read back has the prefix removed.
 * - Etags cross this boundary without quotes; If-None-Match gets them quoted, If-Match in
 *   the store's form.
 */

/** Raw S3Client settings, for tests and unusual deployments. */
export type S3ClientOverrides = Partial<S3ClientConfig>;

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** How If-Match carries an etag: `"abc…"` (quoted) or `abc…` (bare). */
export type IfMatchEtagForm = "quoted" | "bare";

export interface S3ObjectStoreOptions {
  readonly bucket: string;
  /** Key prefix inside the bucket: "" or ending in "/". */
  readonly prefix?: string;
  readonly region: string;
  /** An S3-compatible endpoint (MinIO, R2, the test endpoint); AWS when omitted. */
  readonly endpoint?: string;
  /** Path-style URLs (`endpoint/bucket/key`); defaults to true when `endpoint` is set. */
  readonly forcePathStyle?: boolean;
  /** Explicit credentials; otherwise the standard AWS chain (env, profile, IMDS …). */
  readonly credentials?: S3Credentials;
  /**
   * "when_supported" (the SDK default) sends a CRC32 with every upload; "when_required"
   * sends checksums only where S3 demands them, for stores that reject the headers.
   */
  readonly checksums?: "when_supported" | "when_required";
  /**
   * Pins the If-Match etag form: "quoted" (what AWS, R2 and MinIO document and the SDK
   * sends) or "bare" (Ceph radosgw 16, which compares the header verbatim). Omitted: the
   * first casPut that succeeds teaches it (the conditional-write probe does one at open),
   * at the cost of one extra PutObject per conflicting casPut until then.
   */
  readonly ifMatchEtag?: IfMatchEtagForm;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly retryPolicy?: RetryPolicy;
  /** Raw S3Client settings applied last (tests, unusual deployments). */
  readonly clientOverrides?: S3ClientOverrides;
}

/** A conditional write: create-only, or compare-and-swap against an unquoted etag. */
type WriteCondition = { readonly kind: "create" } | { readonly kind: "cas"; readonly etag: string };

/** What a read-back says about a conditional write whose outcome was unknown. */
export type ReadBackVerdict = "written" | "repeat" | "conflict" | "ambiguous";

/** What Cairn reads of a GetObject answer's body. */
interface ByteStream {
  transformToByteArray(): Promise<Uint8Array>;
}

export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly retryPolicy: RetryPolicy;
  private etagForm: IfMatchEtagForm | "unknown";

  constructor(options: S3ObjectStoreOptions) {
    const prefix = options.prefix ?? "";
    if (prefix !== "" && !prefix.endsWith("/")) {
      throw new CairnError("STORE_URL_INVALID", `S3 key prefix must be empty or end with "/": ${JSON.stringify(prefix)}`);
    }
    this.bucket = options.bucket;
    this.prefix = prefix;
    this.description = `s3://${options.bucket}/${prefix}${options.endpoint ? ` at ${options.endpoint}` : ""}`;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? systemRandom;
    this.retryPolicy = options.retryPolicy ?? defaultRetryPolicy;
    const pinned = options.ifMatchEtag;
    if (pinned !== undefined && pinned !== "quoted" && pinned !== "bare") {
      throw invalidArgument(`ifMatchEtag must be "quoted" or "bare", not ${JSON.stringify(pinned)}`, { ifMatchEtag: pinned });
    }
    this.etagForm = pinned ?? "unknown";
    this.client = new S3Client(clientConfigFor(options));
  }

  /** The If-Match etag form this store honours: pinned, learned from a 2xx, or not yet known. */
  get ifMatchEtagForm(): IfMatchEtagForm | "unknown" {
    return this.etagForm;
  }

  /**
   * Checks that the bucket exists and the credentials may use it (HeadBucket); writes
   * nothing. STORE_BUCKET_MISSING, STORE_ACCESS_DENIED or STORE_UNREACHABLE otherwise.
   */
  async checkBucket(attemptsMax = this.retryPolicy.attemptsMax): Promise<void> {
    const call = this.call("HeadBucket", "bucket-check");
    await retryTransient(
      async () => {
        const deadline = new AbortController();
        const timer = new AbortController();
        this.clock.sleep(STORE_OPEN_ANSWER_TIMEOUT_MS, timer.signal).then(
          () => deadline.abort(),
          () => undefined,
        );
        try {
          await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: deadline.signal });
        } catch (error) {
          if (deadline.signal.aborted) {
            throw new CairnError("STORE_UNREACHABLE", `HeadBucket on ${call.location}: no answer within ${STORE_OPEN_ANSWER_TIMEOUT_MS} ms`, {
              cause: error,
            });
          }
          throw storeErrorFor(classifyS3Failure(error), call, error);
        } finally {
          timer.abort();
        }
      },
      { clock: this.clock, random: this.random, policy: { ...this.retryPolicy, attemptsMax } },
    );
  }

  async get(key: string, options: GetOptions = {}): Promise<GetResult | null | "not-modified"> {
    const fullKey = this.fullKey(key);
    const call = this.call("GetObject", "read", key);
    return this.retrying(async () => {
      let output;
      let body: Uint8Array | undefined;
      try {
        output = await this.client.send(
          new GetObjectCommand({
            Bucket: this.bucket,
            Key: fullKey,
            ...(options.ifNoneMatch === undefined ? {} : { IfNoneMatch: quoteEtag(options.ifNoneMatch) }),
          }),
        );
        body = await (output.Body as ByteStream | undefined)?.transformToByteArray();
      } catch (error) {
        const failure = classifyS3Failure(error);
        if (failure.kind === "status" && failure.status === 304) return "not-modified" as const;
        if (failure.kind === "status" && failure.status === 404 && failure.code !== "NoSuchBucket") return null;
        throw storeErrorFor(failure, call, error);
      }
      return { body: body ?? new Uint8Array(0), etag: this.requireEtag(output.ETag, call, "STORE_REQUEST_FAILED") };
    });
  }

  async create(key: string, body: Uint8Array): Promise<PutResult> {
    return this.conditionalWrite(key, body, { kind: "create" });
  }

  async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    return this.conditionalWrite(key, body, { kind: "cas", etag: unquoteEtag(etag) });
  }

  async delete(key: string): Promise<void> {
    const fullKey = this.fullKey(key);
    const call = this.call("DeleteObject", "idempotent-write", key);
    await this.retrying(async () => {
      try {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: fullKey }));
      } catch (error) {
        const failure = classifyS3Failure(error);
        // Some S3-compatible stores answer 404 for a missing key; deleting it is a success.
        if (failure.kind === "status" && failure.status === 404 && failure.code !== "NoSuchBucket") return;
        throw storeErrorFor(failure, call, error);
      }
    });
  }

  /** One DeleteObjects request per 1000 keys; keys the store refused are reported together. */
  async deleteMany(keys: readonly string[]): Promise<void> {
    const fullKeys = keys.map((key) => this.fullKey(key));
    const failures: KeyFailure[] = [];
    for (let start = 0; start < fullKeys.length; start += DELETE_BATCH_KEYS_MAX) {
      failures.push(...(await this.deleteBatch(fullKeys.slice(start, start + DELETE_BATCH_KEYS_MAX))));
    }
    if (failures.length === 0) return;
    const code = failures.every((failure) => failure.code === "AccessDenied") ? "STORE_ACCESS_DENIED" : "STORE_REQUEST_FAILED";
    const sample = failures.slice(0, 3).map((failure) => `${failure.key}: ${failure.code}`);
    throw new CairnError(code, `deleting ${failures.length} of ${keys.length} keys failed (${sample.join("; ")})`, {
      details: { failures },
    });
  }

  async *list(prefix: string, options: ListOptions = {}): AsyncIterable<ListEntry> {
    const call = this.call("ListObjectsV2", "read", prefix);
    const startAfter = options.startAfter === undefined ? undefined : this.prefix + options.startAfter;
    let continuationToken: string | undefined;
    // Bounded by the number of keys under the prefix: every page moves past 1000 of them.
    for (;;) {
      const token = continuationToken;
      const page = await this.retrying(async () => {
        try {
          return await this.client.send(
            new ListObjectsV2Command({
              Bucket: this.bucket,
              Prefix: this.prefix + prefix,
              MaxKeys: LIST_PAGE_KEYS_MAX,
              ...(token === undefined ? {} : { ContinuationToken: token }),
              ...(token === undefined && startAfter !== undefined ? { StartAfter: startAfter } : {}),
            }),
          );
        } catch (error) {
          throw storeErrorFor(classifyS3Failure(error), call, error);
        }
      });
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !object.Key.startsWith(this.prefix)) continue;
        const etag = this.requireEtag(object.ETag, call, "STORE_REQUEST_FAILED");
        yield { key: object.Key.slice(this.prefix.length), etag, size: object.Size ?? 0 };
      }
      if (page.IsTruncated !== true) return;
      if (!page.NextContinuationToken) {
        throw new CairnError("STORE_REQUEST_FAILED", `${this.description}: a truncated list page carried no continuation token`);
      }
      continuationToken = page.NextContinuationToken;
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  /**
   * One conditional write within the retry policy's bounds: transient refusals are
   * repeated, unknown outcomes resolved by reading the key back (see the invariants).
   */
  private async conditionalWrite(key: string, body: Uint8Array, condition: WriteCondition): Promise<PutResult> {
    const fullKey = this.fullKey(key);
    const call = this.call("PutObject", "conditional-write", key);
    let unknownOutcome: unknown;
    try {
      return await this.retrying(async () => {
        try {
          return await this.sendConditional(fullKey, body, condition, call);
        } catch (error) {
          if (hasErrorCode(error, "STORE_AMBIGUOUS_OUTCOME")) unknownOutcome = error;
          // After an unknown outcome, a conflict may be our own earlier write that landed.
          else if (unknownOutcome === undefined || !isCasConflict(error)) throw error;
          return this.resolveByReadBack(key, body, condition, unknownOutcome);
        }
      });
    } catch (error) {
      // Out of attempts after an unknown outcome: an earlier attempt may still land.
      if (unknownOutcome === undefined || !isStoreTransient(error)) throw error;
      const exhausted = summaryOf(error);
      throw new CairnError("STORE_AMBIGUOUS_OUTCOME", `${exhausted.message}; an earlier attempt may still land`, {
        cause: error,
        details: exhausted.details,
      });
    }
  }

  /** Sends the write once; a casPut may add one bare-etag repeat while the form is unknown. */
  private async sendConditional(
    fullKey: string,
    body: Uint8Array,
    condition: WriteCondition,
    call: S3Call,
  ): Promise<PutResult> {
    if (condition.kind === "create") return this.sendPut(fullKey, body, { IfNoneMatch: "*" }, call, undefined);
    const form: IfMatchEtagForm = this.etagForm === "bare" ? "bare" : "quoted";
    try {
      return await this.sendPut(fullKey, body, { IfMatch: etagInForm(condition.etag, form) }, call, form);
    } catch (error) {
      // A 412 to the quoted etag proves nothing while the form is unknown. The form is read
      // after the answer: another casPut may have fixed it meanwhile.
      if (form === "bare" || this.etagForm === "quoted" || answeredStatusOf(error) !== 412) throw error;
      return this.sendPut(fullKey, body, { IfMatch: etagInForm(condition.etag, "bare") }, call, "bare");
    }
  }

  /** One PutObject; a 2xx to an If-Match in `form` fixes that form if none was known. */
  private async sendPut(
    fullKey: string,
    body: Uint8Array,
    condition: { IfNoneMatch: string } | { IfMatch: string },
    call: S3Call,
    form: IfMatchEtagForm | undefined,
  ): Promise<PutResult> {
    let output;
    try {
      output = await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body, ContentLength: body.byteLength, ...condition }),
      );
    } catch (error) {
      throw storeErrorFor(classifyS3Failure(error), call, error);
    }
    if (form !== undefined && this.etagForm === "unknown") this.etagForm = form;
    // The write landed, but without its etag only a read-back can tell what is stored.
    return { etag: this.requireEtag(output.ETag, call, "STORE_AMBIGUOUS_OUTCOME") };
  }

  /** Reads the key back to settle a conditional write whose outcome is unknown. */
  private async resolveByReadBack(
    key: string,
    body: Uint8Array,
    condition: WriteCondition,
    unknownOutcome: unknown,
  ): Promise<PutResult> {
    const original = summaryOf(unknownOutcome);
    let stored: GetResult | null;
    try {
      const read = await this.get(key);
      stored = read === "not-modified" ? null : read;
    } catch (readError) {
      const failed = summaryOf(readError);
      throw new CairnError("STORE_AMBIGUOUS_OUTCOME", `${original.message}; reading the key back failed too: ${failed.message}`, {
        cause: unknownOutcome,
        details: { ...original.details, readBack: failed.code },
      });
    }
    const verdict = readBackVerdict(condition, stored, body);
    const details = { ...original.details, readBack: verdict };
    switch (verdict) {
      case "written":
        return { etag: (stored as GetResult).etag };
      case "repeat":
        // STORE_TRANSIENT: the retry loop repeats the write after its backoff, within its bound.
        throw new CairnError("STORE_TRANSIENT", `${original.message}; read back: it did not land, so it is repeated`, {
          cause: unknownOutcome,
          details,
        });
      case "conflict":
        throw new CairnError("CAS_CONFLICT", `${original.message}; read back: another writer's object is there`, {
          cause: unknownOutcome,
          details,
        });
      case "ambiguous":
        throw new CairnError(
          "STORE_AMBIGUOUS_OUTCOME",
          `${original.message}; read back: another object is there, ours may have landed and been overwritten`,
          { cause: unknownOutcome, details },
        );
    }
  }

  private async deleteBatch(fullKeys: readonly string[]): Promise<KeyFailure[]> {
    const call = this.call("DeleteObjects", "idempotent-write");
    return this.retrying(async () => {
      let output;
      try {
        output = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: fullKeys.map((Key) => ({ Key })), Quiet: true },
          }),
        );
      } catch (error) {
        throw storeErrorFor(classifyS3Failure(error), call, error);
      }
      const failures = (output.Errors ?? []).map((entry) => ({
        key: (entry.Key ?? "").slice(this.prefix.length),
        code: entry.Code ?? "Unknown",
        message: entry.Message ?? "",
      }));
      if (failures.some((failure) => TRANSIENT_DELETE_CODES.has(failure.code))) {
        // The whole batch is repeated: deleting is idempotent.
        throw new CairnError("STORE_TRANSIENT", `DeleteObjects on ${this.description}: ${failures.length} keys failed transiently`, {
          details: { failures },
        });
      }
      return failures;
    });
  }

  private retrying<T>(attempt: () => Promise<T>): Promise<T> {
    return retryTransient(attempt, { clock: this.clock, random: this.random, policy: this.retryPolicy });
  }

  private fullKey(key: string): string {
    assertValidKey(key);
    const fullKey = this.prefix + key;
    if (Buffer.byteLength(fullKey, "utf8") > STORE_KEY_BYTES_MAX) {
      throw new CairnError("STORE_KEY_INVALID", `object key with the store's prefix is longer than ${STORE_KEY_BYTES_MAX} bytes`, {
        details: { key, prefix: this.prefix },
      });
    }
    return fullKey;
  }

  private call(operation: string, kind: S3CallKind, key?: string): S3Call {
    const location = `s3://${this.bucket}/${this.prefix}`;
    return key === undefined ? { operation, kind, location } : { operation, kind, location, key };
  }

  private requireEtag(etag: string | undefined, call: S3Call, code: "STORE_REQUEST_FAILED" | "STORE_AMBIGUOUS_OUTCOME"): string {
    if (etag === undefined || etag === "") {
      throw new CairnError(code, `${call.operation} ${call.location}${call.key ?? ""}: the answer carried no ETag`);
    }
    return unquoteEtag(etag);
  }
}

interface KeyFailure {
  readonly key: string;
  readonly code: string;
  readonly message: string;
}

/** Per-key DeleteObjects errors that say "try again", not "you may not". */
const TRANSIENT_DELETE_CODES = new Set(["InternalError", "SlowDown", "ServiceUnavailable"]);

function clientConfigFor(options: S3ObjectStoreOptions): S3ClientConfig {
  const agent = { keepAlive: true, maxSockets: STORE_SOCKETS_MAX };
  return {
    region: options.region,
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    maxAttempts: 1,
    requestChecksumCalculation: options.checksums === "when_required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
    requestHandler: {
      connectionTimeout: STORE_CONNECT_TIMEOUT_MS,
      socketTimeout: STORE_SOCKET_IDLE_TIMEOUT_MS,
      httpAgent: agent,
      httpsAgent: agent,
    },
    ...options.clientOverrides,
  };
}

/**
 * The read-back rule of the invariants, as a pure function of what is stored now. `stored`
 * is null when the key is absent.
 */
export function readBackVerdict(
  condition: { readonly kind: "create" } | { readonly kind: "cas"; readonly etag: string },
  stored: GetResult | null,
  ours: Uint8Array,
): ReadBackVerdict {
  if (stored !== null && Buffer.from(stored.body).equals(ours)) return "written";
  if (condition.kind === "create") return stored === null ? "repeat" : "conflict";
  return stored !== null && stored.etag === condition.etag ? "repeat" : "ambiguous";
}

function quoteEtag(etag: string): string {
  return `"${unquoteEtag(etag)}"`;
}

function etagInForm(etag: string, form: IfMatchEtagForm): string {
  return form === "quoted" ? quoteEtag(etag) : unquoteEtag(etag);
}

/** The message, code and details of a thrown value, for wrapping it. */
function summaryOf(error: unknown): { message: string; code: unknown; details: Readonly<Record<string, unknown>> } {
  const shape = (typeof error === "object" && error !== null ? error : {}) as {
    message?: unknown;
    code?: unknown;
    details?: Readonly<Record<string, unknown>>;
  };
  return {
    message: typeof shape.message === "string" ? shape.message : String(error),
    code: shape.code,
    details: shape.details ?? {},
  };
}

/** S3 etags arrive quoted (`"abc…"`), sometimes weak (`W/"abc…"`). */
export function unquoteEtag(etag: string): string {
  const strong = etag.startsWith("W/") ? etag.slice(2) : etag;
  return strong.length >= 2 && strong.startsWith('"') && strong.endsWith('"') ? strong.slice(1, -1) : strong;
}
