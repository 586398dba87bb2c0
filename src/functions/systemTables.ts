import { SCHEDULED_FUNCTIONS_TABLE, scheduledFunctionsTable } from "./scheduledFunctions.js";
import type { TableDefinition } from "./schema.js";
import { STORAGE_TABLE, storageTable } from "./storedFiles.js";

/**
 * Cairn's own tables, added to every app's schema after the app's tables (their names
 * start with `_`, which an app's cannot): the scheduler's jobs and file storage's files.
 * App code reads them through `ctx.db.system` and never writes them.
 */
export const SYSTEM_TABLES: Readonly<Record<string, TableDefinition>> = {
  [SCHEDULED_FUNCTIONS_TABLE]: scheduledFunctionsTable(),
  [STORAGE_TABLE]: storageTable(),
};

export function isSystemTableName(name: string): boolean {
  return name.startsWith("_");
}
