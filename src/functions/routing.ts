import { CairnError } from "../base/index.js";
import {
  parseDocumentId,
  routeOfId,
  type DocumentId,
  encodeIndexKey,
  type IndexBounds,
  routeOfKey,
  shardOfRoute,
  type Value,
} from "../model/index.js";
import type { IndexInfo, TableInfo } from "./catalog.js";
import { ROUTED_BY_ID } from "./scheduledFunctions.js";

/**
 * Which lane (shard) a document, an id, a scan or a mutation belongs to (DESIGN.md §10).
 *
 * - A table without a shard key lives on shard 0.
 * - A document of a sharded table lives on `shardFor(encodeIndexKey([doc[shardKey]]), N)`;
 *   its id carries that route (newDocumentId), so `get(id)` goes to one lane.
 * - A scan of a sharded table reads one lane when its index starts with the shard key and
 *   the range fixes it (`q.eq(shardKey, value)`), every lane otherwise.
 * - A mutation runs on the lane of its `shardBy` value (shard 0 without one).
 */
export function routeOfValue(value: Value | undefined): Uint8Array {
  return routeOfKey(encodeIndexKey([value]));
}

/**
 * The route a new document of `table` gets from its fields (null: the table has no shard
 * key, or is a system table routed by id, whose writer chooses the route).
 */
export function routeForDocument(table: TableInfo, fields: Readonly<Record<string, unknown>>): Uint8Array | null {
  return table.shardKey === null || table.shardKey === ROUTED_BY_ID ? null : routeOfValue(fields[table.shardKey] as Value | undefined);
}

export function laneOfDocument(table: TableInfo, fields: Readonly<Record<string, unknown>>, lanes: number): number {
  const route = routeForDocument(table, fields);
  return route === null ? 0 : shardOfRoute(route, lanes);
}

export function laneOfId(table: TableInfo, id: DocumentId, lanes: number): number {
  // One shard: nothing to decide, and no second parse of an id the catalog just parsed.
  return table.shardKey === null || lanes === 1 ? 0 : shardOfRoute(routeOfId(parseDocumentId(id)), lanes);
}

/** The one lane a scan of `index` within `bounds` reads, or null when it must read all of them. */
export function laneOfScan(table: TableInfo, index: IndexInfo, bounds: IndexBounds, lanes: number): number | null {
  if (table.shardKey === null) return 0;
  if (lanes === 1) return 0;
  if (index.kind === "entries" && index.fields[0] === table.shardKey && bounds.equal.length > 0) {
    return shardOfRoute(routeOfValue(bounds.equal[0]), lanes);
  }
  return null;
}

export function laneOfValue(value: Value | undefined, lanes: number): number {
  return shardOfRoute(routeOfValue(value), lanes);
}

/** CROSS_SHARD_MUTATION: `what` lives on `other`, the mutation runs on `own`. */
export function crossShard(path: string, own: number, other: number | "every", what: string): CairnError {
  const where = other === "every" ? "every shard" : `shard ${other}`;
  return new CairnError(
    "CROSS_SHARD_MUTATION",
    `mutation ${path} runs on shard ${own} but ${what} ${other === "every" ? "reads" : "is on"} ${where}; a mutation touches one shard ` +
      `(declare shardBy so it runs where its documents are, or split it); nothing was written`,
    { details: { path, shards: other === "every" ? ["every"] : [own, other] } },
  );
}
