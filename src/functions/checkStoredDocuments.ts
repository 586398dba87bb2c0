import { CairnError, SCHEMA_CHECK_OFFENDERS_MAX } from "../base/index.js";
import type { LocalStore } from "../local/index.js";
import type { Catalog, TableInfo } from "./catalog.js";
import { decodeDocument } from "./documents.js";
import { validateWith } from "./validate.js";

/** Documents read per batch while checking a table. */
const BATCH_DOCUMENTS = 1_024;

/**
 * Checks every stored document of `tables` (every shard's local copy, at its readTs)
 * against the tables' field validators in `catalog` — the schema about to be accepted.
 * SCHEMA_CHANGE_REFUSED naming up to SCHEMA_CHECK_OFFENDERS_MAX offending documents and
 * why each fails, and how to go on (migrate them first, or `schemaValidation: false`).
 */
export function checkStoredDocuments(catalog: Catalog, tables: readonly TableInfo[], shards: readonly { readonly local: LocalStore; readonly readTs: number }[]): void {
  const offending: { table: string; id: string; problem: string }[] = [];
  let checked = 0;
  for (const table of tables) {
    for (const { local, readTs } of shards) {
      let start = "";
      for (;;) {
        const rows = local.documentScan(table.number, { start, end: null }, readTs, "asc", BATCH_DOCUMENTS);
        for (const row of rows) {
          checked++;
          const { _id: _id, _creationTime: _time, ...fields } = decodeDocument(row.id, row.value);
          try {
            validateWith(table.validator, fields, { noun: "document", root: table.name }, catalog.tableNumberOf);
          } catch (error) {
            if (offending.length < SCHEMA_CHECK_OFFENDERS_MAX) offending.push({ table: table.name, id: row.id, problem: (error as Error).message });
          }
        }
        if (rows.length < BATCH_DOCUMENTS) break;
        start = `${rows.at(-1)!.id}\u0000`;
      }
    }
  }
  if (offending.length === 0) return;
  throw new CairnError(
    "SCHEMA_CHANGE_REFUSED",
    `schema change refused: stored documents do not pass the new validators of ${[...new Set(offending.map((entry) => entry.table))].join(", ")} ` +
      `(${checked} checked): ${offending.map((entry) => `${entry.id}: ${entry.problem}`).join("; ")}. ` +
      `Migrate them first (docs/functions.md#migrating-documents), or accept the change unchecked with defineSchema({ … }, { schemaValidation: false })`,
    { details: { offending } },
  );
}
