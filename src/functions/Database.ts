import { CairnError, type Random } from "../base/index.js";
import type { PendingStamp } from "../shard/index.js";
import {
  compareValues,
  newDocumentId,
  type DocumentId,
  type ValueObject,
  withoutUndefinedFields,
  compareBytes,
  type Value,
  encodeIndexKey,
} from "../model/index.js";
import type { Catalog, TableInfo } from "./catalog.js";
import type { DocumentObject } from "./documents.js";
import type { PendingDocument, PendingWrites } from "./PendingWrites.js";
import { QueryChain } from "./QueryChain.js";
import { documentCapture } from "./DiffableRead.js";
import type { SnapshotReads } from "./SnapshotReads.js";
import { validateWith } from "./validate.js";
import { checkImportedDocument } from "./importedDocument.js";
import { laneOfDocument, laneOfId, routeForDocument } from "./routing.js";
import { SCHEDULED_FUNCTIONS_TABLE } from "./scheduledFunctions.js";
import { isSystemTableName } from "./systemTables.js";

/**
 * `ctx.db`: reads for queries and mutations, writes for mutations. Reads see the
 * snapshot at the run's readTs and, in a mutation, its own earlier writes. Writes are
 * validated against the table's schema when they are made (INVALID_ARGUMENT naming the
 * field, VALUE_TOO_LARGE), so the handler sees the error at the call, and are committed
 * together when the handler returns.
 */
export class DatabaseReader {
  constructor(protected readonly reads: SnapshotReads) {}

  /** The deployment's tables (the system functions read any table by name; apps name theirs in code). */
  get catalog(): Catalog {
    return this.reads.catalog;
  }

  async get(id: DocumentId): Promise<DocumentObject | null> {
    const turn = this.reads.turnFor(id);
    if (turn !== undefined) await turn;
    const { table, document } = this.reads.document(id);
    const guard = this.reads.guard;
    // Null is never guarded (ResultGuard): a handler's null test is a look no trap sees.
    return guard === null || document === null ? document : guard.wrap(document, documentCapture(table, document));
  }

  query(tableName: string): QueryChain {
    const table = this.reads.catalog.table(tableName);
    if (isSystemTableName(table.name)) {
      throw new CairnError("INVALID_ARGUMENT", `${table.name} is a system table: read it with ctx.db.system.query(${JSON.stringify(table.name)})`, { details: { table: table.name } });
    }
    return new QueryChain(this.reads, table);
  }

  /** Reads of Cairn's system tables (`_scheduled_functions`): the same reads, live in a subscription like any other. */
  get system(): { get(id: DocumentId): Promise<DocumentObject | null>; query(tableName: string): QueryChain } {
    return {
      get: (id) => this.get(id),
      query: (tableName) => {
        const table = this.reads.catalog.table(tableName);
        if (!isSystemTableName(table.name)) throw new CairnError("INVALID_ARGUMENT", `${table.name} is not a system table: read it with ctx.db.query`, { details: { table: table.name } });
        return new QueryChain(this.reads, table);
      },
    };
  }

  /** Any table, system ones too (the admin's data browser). */
  queryAny(tableName: string): QueryChain {
    return new QueryChain(this.reads, this.reads.catalog.table(tableName));
  }
}

export class DatabaseWriter extends DatabaseReader {
  constructor(
    reads: SnapshotReads,
    private readonly pending: PendingWrites,
    private readonly ids: Random,
    private readonly creationTimeMs: number,
  ) {
    super(reads);
  }

  async insert(tableName: string, value: ValueObject): Promise<DocumentId> {
    this.reads.assertRunning();
    const table = writable(this.reads.catalog.table(tableName));
    const fields = this.validated(table, value);
    this.reads.checkLane(laneOfDocument(table, fields, this.reads.laneCount), () => `the new document of ${table.name} (${table.shardKey} ${JSON.stringify(fields[table.shardKey!])})`);
    const id = newDocumentId(table.number, this.ids, routeForDocument(table, fields) ?? undefined);
    this.pending.write(id, table, null, { _id: id, _creationTime: this.creationTimeMs, ...fields } as DocumentObject);
    return id;
  }

  /**
   * Writes a document with the id and creation time it had where it was exported from
   * (`cairn import`): validated as an insert is; the id must name this table (and, for a
   * table with a shard key, that key's route). An identical document already there is
   * left alone ("unchanged": an import run again); a different one is IMPORT_CONFLICT.
   */
  async importDocument(tableName: string, exported: Readonly<Record<string, unknown>>): Promise<"written" | "unchanged"> {
    this.reads.assertRunning();
    const { table, id, creationTime, fields } = checkImportedDocument(this.reads.catalog, tableName, exported);
    this.reads.checkLane(laneOfId(table, id, this.reads.laneCount), () => `document ${id} of ${table.name}`);
    const document = { _id: id, _creationTime: creationTime, ...fields } as DocumentObject;
    const written = this.pending.get(id);
    const existing = written !== undefined ? written.after : this.reads.document(id).document;
    if (existing !== null) {
      if (compareValues(existing as Value, document as Value) === 0) return "unchanged";
      throw new CairnError("IMPORT_CONFLICT", `document ${id} of ${table.name} already exists with other contents; nothing of this batch was written`, {
        details: { id, table: table.name },
      });
    }
    this.pending.write(id, table, null, document);
    return "written";
  }

  /** Shallow merge: fields of `value` replace the document's, an `undefined` field removes it. */
  async patch(id: DocumentId, value: ValueObject): Promise<void> {
    const turn = this.reads.turnFor(id);
    if (turn !== undefined) await turn;
    const current = this.existing(id, "patch");
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("patch takes an object of fields");
    checkNoSystemFields(value as Record<string, unknown>, current.document, "patch");
    const merged: Record<string, unknown> = { ...withoutSystemFields(current.document) };
    for (const [name, field] of Object.entries(value)) {
      if (name === "_id" || name === "_creationTime") continue;
      if (field === undefined) delete merged[name];
      else merged[name] = field;
    }
    this.replaceWith(current, merged);
  }

  async replace(id: DocumentId, value: ValueObject): Promise<void> {
    const turn = this.reads.turnFor(id);
    if (turn !== undefined) await turn;
    const current = this.existing(id, "replace");
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("replace takes an object of fields");
    checkNoSystemFields(value as Record<string, unknown>, current.document, "replace");
    this.replaceWith(current, withoutSystemFields(value));
  }

  async delete(id: DocumentId): Promise<void> {
    const turn = this.reads.turnFor(id);
    if (turn !== undefined) await turn;
    const current = this.existing(id, "delete");
    writable(current.table);
    this.pending.write(current.id, current.table, this.before(current), null);
  }

  /**
   * Cairn's own write of a system table's new document (the scheduler's), validated like
   * any insert, with the route its id carries (the table is routed by id): it must be this
   * run's lane.
   */
  insertSystem(tableName: string, value: ValueObject, route: Uint8Array): DocumentId {
    this.reads.assertRunning();
    const table = this.reads.catalog.table(tableName);
    const fields = this.validated(table, value);
    const id = newDocumentId(table.number, this.ids, route);
    this.reads.checkLane(laneOfId(table, id, this.reads.laneCount), () => `the new document of ${table.name}`);
    this.pending.write(id, table, null, { _id: id, _creationTime: this.creationTimeMs, ...fields } as DocumentObject);
    return id;
  }

  /** Cairn's own replacement of a system table's document (a job's new state), read in this run first. */
  replaceSystem(id: DocumentId, value: ValueObject): void {
    const current = this.existing(id, "replace");
    const checked = this.validated(current.table, withoutSystemFields(value));
    this.pending.write(current.id, current.table, this.before(current), { _id: current.id, _creationTime: current.document._creationTime, ...checked } as DocumentObject);
  }

  /** Cairn's own deletion of a system table's document (a finished job past its keeping). */
  deleteSystem(id: DocumentId): void {
    const current = this.existing(id, "delete");
    this.pending.write(current.id, current.table, this.before(current), null);
  }

  private replaceWith(current: Existing, fields: Record<string, unknown>): void {
    writable(current.table);
    const checked = this.validated(current.table, fields);
    const shardKey = current.table.shardKey;
    if (shardKey !== null && compareBytes(encodeIndexKey([checked[shardKey]]), encodeIndexKey([current.document[shardKey] as Value | undefined])) !== 0) {
      throw invalid(`${current.table.name}.${shardKey} is the table's shard key: it decides the shard a document lives on and cannot change (insert a new document instead)`);
    }
    const after = { _id: current.id, _creationTime: current.document._creationTime, ...checked } as DocumentObject;
    this.pending.write(current.id, current.table, this.before(current), after);
  }

  private existing(id: DocumentId, operation: string): Existing {
    const found = this.reads.document(id);
    if (found.document === null) {
      throw new CairnError("DOCUMENT_NOT_FOUND", `${operation}: no document ${String(id)} in table ${found.table.name}`, {
        details: { id, table: found.table.name },
      });
    }
    return { table: found.table, id: found.id, document: found.document, ts: found.ts, ...(found.stamp ? { stamp: found.stamp } : {}) };
  }

  /** The snapshot version a write replaces: the one first read, kept if the document was already written. */
  private before(current: Existing): PendingDocument["before"] {
    const pending = this.pending.get(current.id);
    if (pending !== undefined) return pending.before;
    // A revision the shard's writer has pending: its ts is known once it is stamped.
    if (current.stamp !== undefined) return { document: current.document, ts: null, stamp: current.stamp };
    if (current.ts === null) throw new CairnError("INTERNAL", `document ${current.id} read from the store without a ts`);
    return { document: current.document, ts: current.ts };
  }

  private validated(table: TableInfo, value: unknown): ValueObject {
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid(`a document of ${table.name} must be an object`);
    return validateWith(table.validator, withoutUndefinedFields(value), { noun: "document", root: table.name }, this.reads.catalog.tableNumberOf) as ValueObject;
  }
}

interface Existing {
  readonly table: TableInfo;
  readonly id: DocumentId;
  readonly document: DocumentObject;
  readonly ts: number | null;
  readonly stamp?: PendingStamp;
}

function withoutSystemFields(document: Record<string, unknown>): Record<string, unknown> {
  const { _id: _ignoredId, _creationTime: _ignoredTime, ...fields } = document;
  return fields;
}

/** System fields may be echoed back unchanged (a read document passed to replace), never changed. */
function checkNoSystemFields(value: Record<string, unknown>, current: DocumentObject, operation: string): void {
  for (const name of ["_id", "_creationTime"] as const) {
    if (Object.hasOwn(value, name) && value[name] !== undefined && value[name] !== current[name]) {
      throw invalid(`${operation} may not change the system field ${name}`);
    }
  }
}

/** An app's write may not touch a system table: Cairn keeps them consistent (a job is cancelled with ctx.scheduler.cancel). */
function writable(table: TableInfo): TableInfo {
  if (isSystemTableName(table.name)) {
    throw new CairnError("INVALID_ARGUMENT", `${table.name} is a system table, written only by Cairn${table.name === SCHEDULED_FUNCTIONS_TABLE ? " (schedule and cancel jobs with ctx.scheduler)" : ""}`, {
      details: { table: table.name },
    });
  }
  return table;
}

function invalid(message: string): CairnError {
  return new CairnError("INVALID_ARGUMENT", message);
}
