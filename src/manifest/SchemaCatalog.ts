import { z } from "zod";
import type { Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { bucketLayout } from "./bucketLayout.js";
import { CasObject, jsonCasCodec } from "./CasObject.js";

/**
 * The deployment's schema catalog (bucket key `schema`): the table number and index ids
 * every table and index of the app's schema was given, so that numbers stay stable
 * across schema changes and every node maps names to the same keyspaces. Written with a
 * CAS by whichever node loads a schema that adds something (functions/catalog).
 *
 * Invariants: numbers are never reused (`nextTableNumber`/`nextIndexId` only grow);
 * an index is "backfilling" from when it is added to a table that may hold data until
 * every existing document has its entry, then "ready".
 */
export const SCHEMA_CATALOG_FORMAT = 1;

const identifier = z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/).max(64);
/** A table's name: an app's identifier, or a system table's (`_` and an identifier, e.g. `_scheduled_functions`). */
const tableName = z.string().regex(/^_?[A-Za-z][A-Za-z0-9_]*$/).max(64);

export const catalogIndexSchema = z.object({
  name: identifier,
  id: z.number().int().min(1),
  fields: z.array(z.string().min(1)),
  /** "dropping": removed from the schema with an acknowledgement; its entries are being deleted shard by shard (droppedShards), then it leaves the catalog. */
  state: z.enum(["ready", "backfilling", "dropping"]),
  /**
   * "search": a full-text search index; `fields` are its filter fields, then its search
   * field (functions/searchTerms.ts: one entry per distinct term of a document). Absent:
   * an ordinary index, one entry per document.
   */
  kind: z.literal("search").optional(),
  /**
   * While "backfilling": the shards whose documents all have their entry (each shard's
   * writer backfills its own; the index is "ready" once every shard is listed).
   */
  backfilledShards: z.array(z.number().int().min(0)).optional(),
  /** While "dropping" (an index or its table): the shards whose data of it is deleted. */
  droppedShards: z.array(z.number().int().min(0)).optional(),
});

export const catalogTableSchema = z.object({
  name: tableName,
  number: z.number().int().min(1),
  shardKey: z.string().nullable(),
  indexes: z.array(catalogIndexSchema),
  /** "dropping": removed from the schema with an acknowledgement; its documents are being deleted shard by shard, then it leaves the catalog (its number is never reused). */
  state: z.literal("dropping").optional(),
  droppedShards: z.array(z.number().int().min(0)).optional(),
  /** SHA-256 of the table's field validators as JSON Schema: a change is checked against the stored documents. */
  validator: z.string().optional(),
});

export const schemaCatalogSchema = z.object({
  format: z.literal(SCHEMA_CATALOG_FORMAT),
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  nextTableNumber: z.number().int().min(1),
  nextIndexId: z.number().int().min(1),
  tables: z.array(catalogTableSchema),
});

export type CatalogIndex = z.infer<typeof catalogIndexSchema>;
export type CatalogTable = z.infer<typeof catalogTableSchema>;
export type SchemaCatalog = z.infer<typeof schemaCatalogSchema>;

export const schemaCatalogCodec = jsonCasCodec(schemaCatalogSchema, "SCHEMA_CATALOG_INVALID", "schema catalog");

export function schemaCatalogObject(store: ObjectStore, random: Random): CasObject<SchemaCatalog> {
  return new CasObject(store, bucketLayout.schemaCatalog(), schemaCatalogCodec, random);
}
