import { CairnError } from "../../src/base/errors.js";
import type { StoreOperation } from "../../src/objectstore/index.js";
import { round } from "../kit/LatencySummary.js";

/**
 * A node's object-store calls as its GET /metrics counts them
 * (`cairn_store_requests_total{operation, outcome}`, see ServerMetrics), and what they
 * cost as S3 requests. A call is one ObjectStore call: a `get` is one GetObject (a 404
 * of an empty slot and a 304 of an unchanged manifest included), `create` and `casPut`
 * one PutObject each, `list` one ListObjectsV2 per listing (the small prefixes a node
 * lists fit one page), `delete` one DeleteObject, `deleteMany` one DeleteObjects.
 */
export type StoreCallCounts = Readonly<Record<StoreOperation, number>>;

export const STORE_OPERATIONS: readonly StoreOperation[] = ["get", "create", "casPut", "delete", "deleteMany", "list"];

/** S3 request classes by price (S3 Standard: GET $0.0004 / 1,000; PUT, LIST and POST $0.005 / 1,000; DELETE free). */
export type RequestClass = "GET" | "PUT" | "LIST" | "DELETE";

const CLASS_OF: Readonly<Record<StoreOperation, RequestClass>> = {
  get: "GET",
  create: "PUT",
  casPut: "PUT",
  list: "LIST",
  delete: "DELETE",
  // A multi-object delete is a POST, priced like a PUT.
  deleteMany: "PUT",
};

export const DOLLARS_PER_REQUEST: Readonly<Record<RequestClass, number>> = {
  GET: 0.0004 / 1000,
  PUT: 0.005 / 1000,
  LIST: 0.005 / 1000,
  DELETE: 0,
};

const STORE_REQUESTS_LINE = /^cairn_store_requests_total\{([^}]*)\}\s+(\S+)$/;

/** Calls per operation (both outcomes) from Prometheus text. */
export function parseStoreCalls(metricsText: string): StoreCallCounts {
  const counts = emptyCounts();
  for (const line of metricsText.split("\n")) {
    const match = STORE_REQUESTS_LINE.exec(line.trim());
    if (match === null) continue;
    const operation = /operation="([^"]+)"/.exec(match[1]!)?.[1] as StoreOperation | undefined;
    if (operation === undefined || !(operation in counts)) throw new CairnError("INTERNAL", `unknown store operation in /metrics: ${line}`);
    counts[operation] += Number(match[2]);
  }
  return counts;
}

export function difference(after: StoreCallCounts, before: StoreCallCounts): StoreCallCounts {
  const counts = emptyCounts();
  for (const operation of STORE_OPERATIONS) counts[operation] = after[operation] - before[operation];
  return counts;
}

export function byRequestClass(counts: StoreCallCounts): Readonly<Record<RequestClass, number>> {
  const classes: Record<RequestClass, number> = { GET: 0, PUT: 0, LIST: 0, DELETE: 0 };
  for (const operation of STORE_OPERATIONS) classes[CLASS_OF[operation]] += counts[operation];
  return classes;
}

export function dollarsOf(classes: Readonly<Record<RequestClass, number>>): number {
  return (Object.keys(classes) as RequestClass[]).reduce((total, name) => total + classes[name] * DOLLARS_PER_REQUEST[name], 0);
}

/** Every count scaled by `factor` (a window's counts to an hour's), rounded to 0.1. */
export function scaled<K extends string>(counts: Readonly<Record<K, number>>, factor: number): Record<K, number> {
  return Object.fromEntries(Object.entries<number>(counts).map(([key, value]) => [key, round(value * factor, 1)])) as Record<K, number>;
}

function emptyCounts(): Record<StoreOperation, number> {
  return { get: 0, create: 0, casPut: 0, delete: 0, deleteMany: 0, list: 0 };
}
