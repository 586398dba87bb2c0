import { REQUEST_PRICE_DOLLARS, S3_OPERATIONS, type S3Operation } from "../../test/support/s3-endpoint/index.js";
import type { EndpointCounters } from "../kit/endpointProtocol.js";
import { round } from "../kit/LatencySummary.js";

/**
 * What a measured window's S3 requests cost, from the endpoint's counters: per 1,000
 * mutations acknowledged in the window (phases 3 and 5), or per hour of an idle shard.
 * Prices are S3 Standard's (PUT/LIST $0.005, GET/HEAD $0.0004 per 1000, DELETE free).
 */
export interface MutationRequestCosts {
  /** Requests the endpoint served in the window, per operation (operations with none left out). */
  readonly requests: Partial<Record<S3Operation, number>>;
  readonly requestsPer1000Mutations: Partial<Record<S3Operation, number>>;
  readonly putBytesPerMutation: number;
  readonly dollarsPerMillionMutations: number;
}

export interface IdleRequestCosts {
  readonly measuredSeconds: number;
  readonly requests: Partial<Record<S3Operation, number>>;
  /** The window's requests scaled to one hour. */
  readonly requestsPerHour: Partial<Record<S3Operation, number>>;
  readonly dollarsPerHour: number;
}

export function mutationRequestCosts(counters: EndpointCounters, mutations: number): MutationRequestCosts {
  const requests = servedRequests(counters);
  const requestsPer1000Mutations: Partial<Record<S3Operation, number>> = {};
  for (const [operation, count] of entriesOf(requests)) requestsPer1000Mutations[operation] = round((count * 1000) / mutations, 3);
  return {
    requests,
    requestsPer1000Mutations,
    putBytesPerMutation: round(counters.PutObject.bytesIn / mutations, 1),
    dollarsPerMillionMutations: round((dollarsOf(requests) * 1_000_000) / mutations, 4),
  };
}

export function idleRequestCosts(counters: EndpointCounters, measuredSeconds: number): IdleRequestCosts {
  const requests = servedRequests(counters);
  const scale = 3600 / measuredSeconds;
  const requestsPerHour: Partial<Record<S3Operation, number>> = {};
  for (const [operation, count] of entriesOf(requests)) requestsPerHour[operation] = round(count * scale, 1);
  return { measuredSeconds: round(measuredSeconds, 3), requests, requestsPerHour, dollarsPerHour: round(dollarsOf(requests) * scale, 6) };
}

function servedRequests(counters: EndpointCounters): Partial<Record<S3Operation, number>> {
  const requests: Partial<Record<S3Operation, number>> = {};
  for (const operation of S3_OPERATIONS) {
    const count = counters[operation].requests;
    if (count > 0) requests[operation] = count;
  }
  return requests;
}

function dollarsOf(requests: Partial<Record<S3Operation, number>>): number {
  return entriesOf(requests).reduce((total, [operation, count]) => total + count * REQUEST_PRICE_DOLLARS[operation], 0);
}

function entriesOf(requests: Partial<Record<S3Operation, number>>): [S3Operation, number][] {
  return Object.entries(requests) as [S3Operation, number][];
}
