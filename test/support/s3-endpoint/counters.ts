import { S3_OPERATIONS, type S3Operation } from "./operations.js";

/**
 * Requests, bytes and errors per operation, so that benchmarks can report S3 requests
 * and dollars per mutation. Bytes in are the request body as received on the wire
 * (aws-chunked framing included); bytes out are the response body sent. A request whose
 * connection the endpoint dropped counts as an error: the client saw no answer. Requests
 * that address no known operation (refused with 501) are not counted.
 */

export interface OperationCounters {
  requests: number;
  bytesIn: number;
  bytesOut: number;
  errors: number;
}

/**
 * S3 Standard request prices (us-east-1) in dollars per request: PUT, LIST and POST
 * $0.005 per 1000; GET and HEAD $0.0004 per 1000; DELETE free.
 */
export const REQUEST_PRICE_DOLLARS: Readonly<Record<S3Operation, number>> = {
  PutObject: 0.005 / 1000,
  GetObject: 0.0004 / 1000,
  HeadObject: 0.0004 / 1000,
  DeleteObject: 0,
  DeleteObjects: 0.005 / 1000,
  ListObjectsV2: 0.005 / 1000,
  CreateBucket: 0.005 / 1000,
  HeadBucket: 0.0004 / 1000,
};

export class Counters {
  private values = emptyCounters();

  recordRequest(operation: S3Operation, bytesIn: number): void {
    const counters = this.values[operation];
    counters.requests++;
    counters.bytesIn += bytesIn;
  }

  recordResponse(operation: S3Operation, status: number, bytesOut: number): void {
    const counters = this.values[operation];
    counters.bytesOut += bytesOut;
    if (status >= 400) counters.errors++;
  }

  recordDrop(operation: S3Operation): void {
    this.values[operation].errors++;
  }

  /** A copy: later requests do not change what the caller holds. */
  snapshot(): Readonly<Record<S3Operation, OperationCounters>> {
    const copy = emptyCounters();
    for (const operation of S3_OPERATIONS) copy[operation] = { ...this.values[operation] };
    return copy;
  }

  reset(): void {
    this.values = emptyCounters();
  }

  costDollars(): number {
    return S3_OPERATIONS.reduce(
      (total, operation) => total + this.values[operation].requests * REQUEST_PRICE_DOLLARS[operation],
      0,
    );
  }
}

function emptyCounters(): Record<S3Operation, OperationCounters> {
  const entries = S3_OPERATIONS.map((operation) => [operation, { requests: 0, bytesIn: 0, bytesOut: 0, errors: 0 }]);
  return Object.fromEntries(entries) as Record<S3Operation, OperationCounters>;
}
