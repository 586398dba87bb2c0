/**
 * The local SQLite materialization of a shard (DESIGN.md §6): the public surface the
 * shard engine, the replica tailer, snapshots and the functions layer code against.
 */
export {
  LocalStore,
  type ApplyBatch,
  type DocumentVersion,
  type IndexScanRange,
  type IndexScanRow,
  type LocalStoreOptions,
  type StoredRows,
} from "./LocalStore.js";
export type { LocalMeta, MetaUpdate } from "./LocalMeta.js";
export { OverlayBudget, type OverlayBudgetLimits } from "./OverlayBudget.js";
export type { ScannedDocument } from "./scanDocuments.js";
export { dumpRowBytes, type DumpChunk, type DumpCursor, type DumpCursorOptions } from "./DumpCursor.js";
export type { RestoreMeta, RestoreOptions, RestoreStats } from "./restore.js";
export type { PruneStats } from "./pruneHistory.js";
export { SCHEMA_VERSION } from "./schema.js";
