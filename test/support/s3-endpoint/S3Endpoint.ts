import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { invalidArgument } from "../../../src/base/errors.js";
import { authenticate } from "./authenticate.js";
import { createBucket, deleteObjects, headBucket, listObjectsV2 } from "./bucketOperations.js";
import { Buckets, isValidBucketName, type Bucket } from "./buckets.js";
import { isConditionalPut, refusePut } from "./conditionalPut.js";
import { Counters, type OperationCounters } from "./counters.js";
import { KEEP_ALIVE_TIMEOUT_MS, REQUEST_BODY_BYTES_MAX } from "./endpointLimits.js";
import {
  Faults,
  responseDelayMs,
  type AfterCommitStatus,
  type FaultController,
  type FaultTarget,
  type InjectedFailure,
} from "./faults.js";
import { deleteObject, getObject, putConditionsOf, putObject, type ObjectRequest } from "./objectOperations.js";
import { validatedSettings, type S3EndpointCredentials, type S3EndpointOptions, type Settings } from "./endpointSettings.js";
import { isS3EndpointMode, type S3EndpointMode, type S3Operation } from "./operations.js";
import { decodePayload, type Payload } from "./payload.js";
import { requestHeadOf, type RequestHead } from "./requestHead.js";
import { xmlResponse, type S3Response } from "./response.js";
import { routeOf, type Route } from "./route.js";
import {
  S3Error,
  conditionalRequestConflict,
  internalError,
  isS3Error,
  noSuchBucket,
  serviceUnavailable,
  slowDown,
} from "./S3Error.js";
import { errorDocument } from "./xml.js";

/**
 * The S3 test endpoint's server: accepts connections, runs each request through
 * read body → route → authenticate → bucket → payload checks → pause → injected faults
 * → operation → download delay (a latency model's size cost of the answer's body) →
 * answer (or drop, or an injected 5xx in its place), and counts what it
 * served. A request the router
 * refuses is answered only after authentication, as S3 does.
 *
 * Lifecycle: listening → closed. close() aborts every request in flight (held, sleeping
 * or reading), destroys every socket, and stops listening; it is idempotent.
 */

export interface S3Endpoint {
  /** "http://127.0.0.1:<port>" */
  readonly url: string;
  readonly port: number;
  readonly region: string;
  /** The first accepted credentials. */
  readonly credentials: S3EndpointCredentials;
  /** The first bucket. */
  readonly bucket: string;
  readonly faults: FaultController;
  setMode(mode: S3EndpointMode): void;
  /** Creates a bucket directly (no request counted); an existing bucket is left as it is. */
  createBucket(name: string): void;
  /** Requests and bytes per operation since start or the last reset. */
  counters(): Readonly<Record<S3Operation, OperationCounters>>;
  resetCounters(): void;
  /**
   * S3 Standard cost of the counted requests in dollars (PUT/LIST/POST $0.005 per 1000,
   * GET/HEAD $0.0004 per 1000, DELETE free).
   */
  costDollars(): number;
  /** Direct access for tests: a copy of the stored body of a key, or undefined. */
  peek(bucket: string, key: string): Uint8Array | undefined;
  close(): Promise<void>;
}

export async function startS3Endpoint(options: S3EndpointOptions = {}): Promise<S3Endpoint> {
  const settings = validatedSettings(options);
  const server = createServer();
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  return new RunningEndpoint(server, settings);
}

/** S3Client configuration for this endpoint (endpoint, region, credentials, forcePathStyle: true). */
export function s3ClientConfigFor(endpoint: S3Endpoint): {
  endpoint: string;
  region: string;
  forcePathStyle: true;
  credentials: { accessKeyId: string; secretAccessKey: string };
} {
  return {
    endpoint: endpoint.url,
    region: endpoint.region,
    forcePathStyle: true,
    credentials: { accessKeyId: endpoint.credentials.accessKeyId, secretAccessKey: endpoint.credentials.secretAccessKey },
  };
}

/** An operation's outcome: an answer, or "drop" (acted, then close the socket unanswered). */
type Outcome = S3Response | "drop";

class RunningEndpoint implements S3Endpoint {
  readonly url: string;
  readonly port: number;
  readonly region: string;
  readonly credentials: S3EndpointCredentials;
  readonly bucket: string;
  readonly faults: Faults;
  private mode: S3EndpointMode;
  private readonly secrets: ReadonlyMap<string, string>;
  private readonly buckets = new Buckets();
  private readonly counts = new Counters();
  private readonly sockets = new Set<Socket>();
  /** One controller per request being served; close() aborts them all. */
  private readonly inFlight = new Set<AbortController>();
  private readonly requestIdPrefix = randomBytes(4).toString("hex").toUpperCase();
  private requestSequence = 0;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly server: Server,
    settings: Settings,
  ) {
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    this.region = settings.region;
    this.credentials = settings.credentials[0] as S3EndpointCredentials;
    this.bucket = settings.buckets[0] as string;
    this.mode = settings.mode;
    this.faults = new Faults(settings.seed);
    this.secrets = new Map(settings.credentials.map((entry) => [entry.accessKeyId, entry.secretAccessKey]));
    for (const name of settings.buckets) this.buckets.create(name);
    server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      // handle() answers every failure itself; should writing that answer fail too, the
      // client sees a closed connection rather than the test process an unhandled rejection.
      this.handle(request, response).catch(() => request.socket.destroy());
    });
  }

  setMode(mode: S3EndpointMode): void {
    if (!isS3EndpointMode(mode)) throw invalidArgument(`unknown S3 endpoint mode ${JSON.stringify(mode)}`);
    this.mode = mode;
  }

  createBucket(name: string): void {
    if (!isValidBucketName(name)) throw invalidArgument(`invalid bucket name ${JSON.stringify(name)}`);
    this.buckets.create(name);
  }

  counters(): Readonly<Record<S3Operation, OperationCounters>> {
    return this.counts.snapshot();
  }

  resetCounters(): void {
    this.counts.reset();
  }

  costDollars(): number {
    return this.counts.costDollars();
  }

  peek(bucket: string, key: string): Uint8Array | undefined {
    const body = this.buckets.get(bucket)?.get(key)?.body;
    return body === undefined ? undefined : new Uint8Array(body);
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      const reason = new Error("the S3 test endpoint was closed");
      for (const controller of this.inFlight) controller.abort(reason);
      this.closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
      for (const socket of this.sockets) socket.destroy();
      this.server.closeAllConnections();
    }
    return this.closing;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const requestId = this.nextRequestId();
    const signal = this.requestSignal(response);
    let operation: S3Operation | undefined;
    try {
      const wire = await readBody(request);
      if (signal.aborted) throw signal.reason;
      const head = requestHeadOf(request);
      const route = routeOrError(head);
      if (!isS3Error(route)) {
        operation = route.operation;
        this.counts.recordRequest(operation, wire.length);
      }
      // S3 authenticates before it looks at what is asked: a bad signature wins over a 501.
      authenticate(head, { secrets: this.secrets, region: this.region, nowMs: Date.now() });
      if (isS3Error(route)) throw route;
      const outcome = await this.serve(head, route, wire, signal);
      if (outcome === "drop") {
        this.counts.recordDrop(route.operation);
        request.socket.destroy();
        return;
      }
      this.send(response, request.method, outcome, requestId, operation);
    } catch (error) {
      if (signal.aborted) {
        request.socket.destroy();
        return;
      }
      const answer = errorResponse(isS3Error(error) ? error : unexpected(error), requestId);
      this.send(response, request.method, answer, requestId, operation);
    }
  }

  private async serve(head: RequestHead, route: Route, wire: Uint8Array, signal: AbortSignal): Promise<Outcome> {
    const bucket = this.buckets.get(route.bucket);
    if (bucket === undefined && route.operation !== "CreateBucket") throw noSuchBucket(route.bucket);
    const payload = decodePayload(head, wire, {
      lengthRequired: route.operation === "PutObject",
      chunkedTrailerRefused: this.mode === "radosgw",
    });
    const conditions = route.operation === "PutObject" ? putConditionsOf(head) : undefined;
    const target: FaultTarget = {
      operation: route.operation,
      key: route.key,
      conditionalPut: conditions !== undefined && isConditionalPut(conditions),
      requestBodyBytes: wire.length,
    };
    // Whether the condition held on arrival: a refusal then means the request lost a race.
    const heldOnArrival =
      target.conditionalPut &&
      conditions !== undefined &&
      route.key !== undefined &&
      bucket !== undefined &&
      refusePut(this.mode, conditions, bucket.get(route.key), route.key) === undefined;
    await this.faults.waitWhilePaused(target, signal);
    const plan = this.faults.plan(target);
    if (plan.delayMs > 0) await sleep(plan.delayMs, undefined, { signal });
    if (plan.failure !== undefined) throw injectedError(plan.failure, route.key ?? "");
    let response: S3Response | undefined;
    let refusal: unknown;
    try {
      response = this.act(route, head, payload, bucket);
    } catch (error) {
      refusal = error;
    }
    if (plan.afterCommit !== undefined) return replacedAnswer(plan.afterCommit);
    if (response !== undefined) {
      const downloadMs = responseDelayMs(plan, response.body?.length ?? 0);
      if (downloadMs > 0) await sleep(downloadMs, undefined, { signal });
      return response;
    }
    if (plan.lostRaceAs500 && heldOnArrival && isS3Error(refusal) && refusal.status === 412) throw internalError();
    throw refusal;
  }

  /** Runs the operation itself; synchronous, so a check-and-write cannot interleave with another request. */
  private act(route: Route, head: RequestHead, payload: Payload, bucket: Bucket | undefined): S3Response {
    if (route.operation === "CreateBucket") return createBucket(this.buckets, route.bucket);
    if (bucket === undefined) throw noSuchBucket(route.bucket);
    switch (route.operation) {
      case "PutObject":
        return putObject(this.objectRequest(route, head, payload, bucket));
      case "GetObject":
        return getObject(this.objectRequest(route, head, payload, bucket), true);
      case "HeadObject":
        return getObject(this.objectRequest(route, head, payload, bucket), false);
      case "DeleteObject":
        return deleteObject(this.objectRequest(route, head, payload, bucket));
      case "ListObjectsV2":
        return listObjectsV2(bucket, route.query);
      case "DeleteObjects":
        return deleteObjects(bucket, payload);
      case "HeadBucket":
        return headBucket(this.region);
    }
  }

  private objectRequest(route: Route, head: RequestHead, payload: Payload, bucket: Bucket): ObjectRequest {
    if (route.key === undefined) throw new Error(`${route.operation} routed without a key`);
    return { head, bucket, key: route.key, payload, mode: this.mode, nowMs: Date.now() };
  }

  private send(
    response: ServerResponse,
    method: string | undefined,
    answer: S3Response,
    requestId: string,
    operation: S3Operation | undefined,
  ): void {
    if (response.destroyed) return;
    const body = method === "HEAD" ? undefined : answer.body;
    const headers: Record<string, string> = {
      ...answer.headers,
      "x-amz-request-id": requestId,
      "x-amz-id-2": hostIdOf(requestId),
      server: "AmazonS3",
    };
    if (body !== undefined) headers["content-length"] = String(body.length);
    else if (method !== "HEAD" && answer.status !== 204 && answer.status !== 304) headers["content-length"] = "0";
    response.writeHead(answer.status, headers);
    response.end(body);
    if (operation !== undefined) this.counts.recordResponse(operation, answer.status, body?.length ?? 0);
  }

  /** Aborted when the endpoint closes or the client goes away before its answer. */
  private requestSignal(response: ServerResponse): AbortSignal {
    const controller = new AbortController();
    this.inFlight.add(controller);
    response.once("close", () => {
      this.inFlight.delete(controller);
      if (!response.writableFinished) controller.abort(new Error("the client closed the connection"));
    });
    if (this.closing !== undefined) controller.abort(new Error("the S3 test endpoint was closed"));
    return controller.signal;
  }

  private nextRequestId(): string {
    this.requestSequence++;
    return this.requestIdPrefix + this.requestSequence.toString(16).toUpperCase().padStart(8, "0");
  }
}

/**
 * The whole request body. Past REQUEST_BODY_BYTES_MAX the rest is read and discarded, so
 * that the client, still sending, receives the 400 on an intact connection.
 */
function readBody(request: IncomingMessage): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    request.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total <= REQUEST_BODY_BYTES_MAX) chunks.push(chunk);
    });
    request.once("end", () => {
      if (total <= REQUEST_BODY_BYTES_MAX) resolve(Buffer.concat(chunks));
      else reject(entityTooLarge(total));
    });
    request.once("error", reject);
    request.once("close", () => {
      if (!request.complete) reject(new Error("the client closed the connection mid-body"));
    });
  });
}

function entityTooLarge(size: number): S3Error {
  return new S3Error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size", [
    ["ProposedSize", String(size)],
    ["MaxSizeAllowed", String(REQUEST_BODY_BYTES_MAX)],
  ]);
}

/** The route, or the S3 error that refuses it (answered only once the request is authenticated). */
function routeOrError(head: RequestHead): Route | S3Error {
  try {
    return routeOf(head);
  } catch (error) {
    if (isS3Error(error)) return error;
    throw error;
  }
}

function errorResponse(error: S3Error, requestId: string): S3Response {
  const xml = errorDocument(error.code, error.message, error.fields, requestId, hostIdOf(requestId));
  return xmlResponse(error.status, xml, error.headers);
}

function injectedError(failure: InjectedFailure, key: string): S3Error {
  switch (failure) {
    case "SlowDown":
      return slowDown();
    case "InternalError":
      return internalError();
    case "ConditionalRequestConflict":
      return conditionalRequestConflict(key);
  }
}

/** What replaces the answer of an operation that acted: nothing, or a 5xx. */
function replacedAnswer(afterCommit: "drop" | AfterCommitStatus): Outcome {
  switch (afterCommit) {
    case "drop":
      return "drop";
    case 500:
      throw internalError();
    case 503:
      throw serviceUnavailable();
    case 502:
      // A reverse proxy whose backend failed answers its own page, not S3 XML.
      return {
        status: 502,
        headers: { "content-type": "text/html" },
        body: Buffer.from("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"),
      };
  }
}

/** A bug in the endpoint: answered as 500 with the cause in the message, so the test shows it. */
function unexpected(error: unknown): S3Error {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return new S3Error(500, "InternalError", `The S3 test endpoint failed: ${detail}`);
}

function hostIdOf(requestId: string): string {
  return Buffer.from(`cairn-s3-test-endpoint/${requestId}`).toString("base64");
}
