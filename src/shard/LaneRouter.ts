import { CairnError } from "../base/index.js";
import {
  parseDocumentId,
  routeOfId,
  type DocumentId,
  encodeIndexKey,
  type ClientReceipt,
  type DocumentRevision,
  type IndexUpdate,
  routeOfKey,
  shardOfRoute,
  type Value,
  decodeValueText,
} from "../model/index.js";
import type { CatalogTable, SchemaCatalog } from "../manifest/index.js";

/**
 * Which lane each stored row belongs to in a layout of `lanes` shards, by the
 * deployment's schema catalog (the same rules as functions/routing, DESIGN.md §10):
 *
 * - a document of a table without a shard key, and its index entries, on lane 0;
 * - a document of a sharded table on `shardOfRoute(route, lanes)`, where the route is the
 *   one its id carries (newDocumentId), and its index entries with it;
 * - a receipt on the lane of the route its mutation ran on (lane 0 without one).
 *
 * `checkDocument` verifies what a reshard must not take on trust: the table is in the
 * catalog, the id's route is the route of the document's shard-key value, and the row
 * was on the lane the old layout puts it on. Anything else is RESHARD_DATA_MISMATCH.
 */
export class LaneRouter {
  private readonly tables = new Map<number, CatalogTable>();

  constructor(
    catalog: SchemaCatalog | null,
    readonly lanes: number,
  ) {
    for (const table of catalog?.tables ?? []) this.tables.set(table.number, table);
  }

  laneOfDocumentId(id: DocumentId): number {
    const parsed = parseDocumentId(id);
    const table = this.table(parsed.tableNumber, id);
    return table.shardKey === null || this.lanes === 1 ? 0 : shardOfRoute(routeOfId(parsed), this.lanes);
  }

  laneOfDocument(row: DocumentRevision): number {
    return this.laneOfDocumentId(row.id);
  }

  laneOfIndexEntry(row: IndexUpdate): number {
    if (row.docId === null) throw new CairnError("INTERNAL", "a dump yielded an index removal");
    return this.laneOfDocumentId(row.docId);
  }

  laneOfReceipt(row: ClientReceipt): number {
    return row.route === null || this.lanes === 1 ? 0 : shardOfRoute(row.route, this.lanes);
  }

  /** Verifies `row`, read from lane `fromLane` of a layout routed by `from`, routes as its table says. */
  checkDocument(row: DocumentRevision, fromLane: number, from: LaneRouter): void {
    const parsed = parseDocumentId(row.id);
    const table = this.table(parsed.tableNumber, row.id);
    if (row.tableNumber !== parsed.tableNumber) {
      throw mismatch(`document ${row.id} is stored under table #${row.tableNumber} but its id names table #${parsed.tableNumber}`, row.id);
    }
    const expectedLane = from.laneOfDocumentId(row.id);
    if (expectedLane !== fromLane) {
      throw mismatch(`document ${row.id} of table ${table.name} is on shard ${fromLane} but routes to shard ${expectedLane} of ${from.lanes}`, row.id);
    }
    // A system table routed by id ("_id"): the route was chosen at insert, and the id is all there is to check.
    if (table.shardKey === null || table.shardKey === "_id" || row.value === null) return;
    const fields = decodeValueText(row.value) as Readonly<Record<string, Value>>;
    const valueRoute = routeOfKey(encodeIndexKey([fields[table.shardKey]]));
    if (Buffer.compare(Buffer.from(valueRoute), Buffer.from(routeOfId(parsed))) !== 0) {
      throw mismatch(
        `document ${row.id} of table ${table.name} has a ${table.shardKey} whose route is not the one its id carries ` +
          `(was the shard key changed, or the document written without it?)`,
        row.id,
      );
    }
  }

  private table(tableNumber: number, id: string): CatalogTable {
    const table = this.tables.get(tableNumber);
    if (table === undefined) throw mismatch(`document ${id} belongs to table #${tableNumber}, which the schema catalog does not have`, id);
    return table;
  }
}

function mismatch(message: string, id: string): CairnError {
  return new CairnError("RESHARD_DATA_MISMATCH", `${message}; nothing was switched`, { details: { id } });
}
