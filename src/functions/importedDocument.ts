import { CairnError } from "../base/index.js";
import { compareBytes, encodeDocumentId, parseDocumentIdOfTable, routeOfId, withoutUndefinedFields, type DocumentId, type ValueObject } from "../model/index.js";
import type { Catalog, TableInfo } from "./catalog.js";
import { routeForDocument } from "./routing.js";
import { validateWith } from "./validate.js";

/** A document as an export holds it and an import writes it back: its id and creation time kept. */
export interface ImportedDocument {
  readonly table: TableInfo;
  readonly id: DocumentId;
  readonly creationTime: number;
  readonly fields: ValueObject;
}

/**
 * Checks an exported document against the deployment's schema as an insert would be
 * checked, and its id against its table (the table's number, and for a table with a
 * shard key, that key's route); INVALID_ARGUMENT (or DOCUMENT_ID_WRONG_TABLE) naming what
 * is wrong. `cairn import` runs it over a whole archive before writing anything, and the
 * import mutation again on each document it writes.
 */
export function checkImportedDocument(catalog: Catalog, tableName: string, document: Readonly<Record<string, unknown>>): ImportedDocument {
  const table = catalog.table(tableName);
  const { _id: id, _creationTime: creationTime, ...rest } = document;
  const parsed = parseDocumentIdOfTable(id, table.number);
  if (typeof creationTime !== "number" || !Number.isFinite(creationTime)) {
    throw new CairnError("INVALID_ARGUMENT", `document ${String(id)} of ${table.name}: _creationTime must be a finite number`);
  }
  const fields = validateWith(table.validator, withoutUndefinedFields(rest), { noun: "document", root: table.name }, catalog.tableNumberOf) as ValueObject;
  const route = routeForDocument(table, fields);
  if (route !== null && compareBytes(route, routeOfId(parsed)) !== 0) {
    throw new CairnError("INVALID_ARGUMENT", `document ${String(id)} of ${table.name}: its id's route is not the route of its ${table.shardKey} (the shard key decides the id)`);
  }
  return { table, id: encodeDocumentId(parsed), creationTime, fields };
}
