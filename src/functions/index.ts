/**
 * The functions layer's public surface (DESIGN.md §7): what an app imports to declare
 * its schema and functions, and what the server uses to run them.
 */
export { v, type Id, type Infer, type ObjectShape, type Validator } from "./values.js";
export {
  defineSchema,
  defineTable,
  SYSTEM_INDEXES,
  type AnySchema,
  type Doc,
  type NewDoc,
  type SchemaDefinition,
  type TableDefinition,
  type TableNames,
} from "./schema.js";
export {
  action,
  functionsFor,
  internalAction,
  internalMutation,
  internalQuery,
  mutation,
  query,
  type ActionCtx,
  type Auth,
  type DatabaseReaderOf,
  type DatabaseWriterOf,
  type FunctionKind,
  type MutationCtx,
  type QueryCtx,
  type RegisteredFunction,
  type UserIdentity,
} from "./registration.js";
export type { PageStatus, PaginationOptions, PaginationResult, QueryChain } from "./QueryChain.js";
export { paginationOptsValidator } from "./paginationOptsValidator.js";
export { paginationResultValidator } from "./paginationResultValidator.js";
export type { IndexRangeBuilder } from "./IndexRangeBuilder.js";
export type { SearchFilterBuilder, SearchQuery } from "./SearchQuery.js";
export type { FilterBuilder, FilterExpression, FilterOperand } from "./FilterBuilder.js";
export { App, type AppModule } from "./App.js";
export { httpAction, httpRouter, HttpRouter, HTTP_METHODS, type HttpAction, type HttpActionHandler, type HttpMethod, type HttpRouteMatch, type HttpRouteSpec } from "./httpRouter.js";
export { AppError } from "./AppError.js";
export { cronJobs, CronJobs, type CronDeclaration, type IntervalSpec } from "./cronJobs.js";
export { actionScheduler, type Scheduler } from "./Scheduler.js";
export { isSystemTableName, SYSTEM_TABLES } from "./systemTables.js";
export { actionStorage, type FileService, type StorageActionWriter, type StorageReader, type StorageWriter } from "./FileStorage.js";
export { FILE_CHUNKS_PREFIX, fileChunkKey, STORAGE_TABLE, type FileMetadata, type StoredFile } from "./storedFiles.js";
export {
  nextTickMs,
  SCHEDULED_FUNCTIONS_TABLE,
  type CronSchedule,
  type JobState,
  type ScheduledJob,
} from "./scheduledFunctions.js";
export type { ShardJobs } from "./shardJobs.js";
export { loadApp } from "./loadApp.js";
export { appImports, bundleFailed, packageEntryFile } from "./appBundle.js";
export { backfilling, Catalog, planCatalog, readCatalog, refreshIndexStates, resolveCatalog, validatorChanges, type IndexInfo, type StoredDocuments, type TableInfo } from "./catalog.js";
export { backfillIndexes, type BackfillProgress } from "./backfillIndexes.js";
export { dropRemoved, type DropProgress } from "./dropRemoved.js";
export {
  FunctionRuntime,
  type ActionRun,
  type CallOptions,
  type MutationCallOptions,
  type MutationRun,
  type QueryCallOptions,
  type QueryRun,
  type RecordedQueryRun,
  type ShardAccess,
  type ShardSet,
} from "./FunctionRuntime.js";
export { writeRangesOf } from "./writeRanges.js";
export {
  describeFunctions,
  describeTables,
  type FunctionInfo,
  type IndexDescription,
  type JsonSchema,
  type TableDescription,
  type TableWithDocuments,
} from "./describeFunctions.js";
export {
  CONSOLE_LEVELS,
  LOG_ENTRY_LEVELS,
  type ConsoleLevel,
  type FunctionLogEntry,
  type FunctionLogError,
  type FunctionLogLine,
  type LogEntryLevel,
} from "./FunctionLogEntry.js";
export { decodeDocument } from "./documents.js";
export { laneOfId } from "./routing.js";
export { checkImportedDocument, type ImportedDocument } from "./importedDocument.js";
export { IMPORT_BATCH_DOCUMENTS_MAX, SYSTEM_MODULE } from "./systemFunctions.js";
export { cairnIdOfConvexId, convexValueToCairn, mapReferences } from "./convexDocuments.js";
export { routeForDocument } from "./routing.js";
export { DiffableResult, type DiffRow, type DiffableShape, type RowChange } from "./DiffableRead.js";
