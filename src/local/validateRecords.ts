import { CairnError, type ErrorCode, DOCUMENT_BYTES_MAX } from "../base/index.js";
import {
  isCanonicalSpelling,
  tableNumberOfId,
  checkDocumentIdOfTable,
  validateIndexKey,
  type ClientReceipt,
  type DocumentRevision,
  type IndexUpdate,
  ROUTE_BYTES,
} from "../model/index.js";

/**
 * Checks on the records that `apply` and `restore` write, run over a whole batch before
 * anything is written. Both callers wrap a problem into their own error code, naming the
 * record kind and position, with the model's error as the cause.
 */
export interface RecordRules {
  /** Rows below the readable floor would resurrect pruned history; see LocalStore. */
  readonly minTs: number;
  /** A restore carries current state only, so it has no deletions. */
  readonly allowDeletions: boolean;
  /**
   * Ids already found valid and canonical in this batch (by their revisions); an index
   * update naming one needs no second parse. Parsing ids is most of the cost of checking
   * a batch, and an index update almost always names a document of its own batch.
   */
  readonly validIds: Set<string>;
  /**
   * False for records already checked before they became durable (the writer checks
   * every unit at commit; a snapshot's rows are a dump of such a store, verified by hash
   * when read): then ids and keys are not parsed again, only the shape and the ts rules
   * are checked. Default true.
   */
  readonly deep?: boolean;
}

export type RecordKind = "revision" | "indexUpdate" | "receipt";

interface Problem {
  readonly reason: string;
  readonly cause?: unknown;
}

/** Throws `code` for the first bad record of `rows`. */
export function validateRows<Row>(
  code: ErrorCode,
  kind: RecordKind,
  rows: readonly Row[],
  rules: RecordRules,
  firstPosition = 0,
): void {
  if (!Array.isArray(rows)) throw new CairnError(code, `${kind} rows must be an array`);
  const check = CHECKS[kind] as (row: Row, rules: RecordRules) => Problem | null;
  for (let index = 0; index < rows.length; index++) {
    const problem = check(rows[index]!, rules);
    if (problem !== null) {
      const position = firstPosition + index;
      throw new CairnError(code, `${kind} #${position}: ${problem.reason}`, {
        cause: problem.cause,
        details: { kind, position },
      });
    }
  }
}

const CHECKS = {
  revision: revisionProblem,
  indexUpdate: indexUpdateProblem,
  receipt: receiptProblem,
} as const satisfies Record<RecordKind, unknown>;

function revisionProblem(row: DocumentRevision, rules: RecordRules): Problem | null {
  if (typeof row !== "object" || row === null) return { reason: "not an object" };
  if (rules.deep === false) {
    if (typeof row.id !== "string" || !Number.isSafeInteger(row.tableNumber)) return { reason: "id must be a string, tableNumber an integer" };
  } else {
    const idProblem = canonicalIdProblem(row.id, () => checkDocumentIdOfTable(row.id, row.tableNumber));
    if (idProblem !== null) return idProblem;
    rules.validIds.add(row.id);
  }
  const tsProblem = timestampProblem(row.ts, rules);
  if (tsProblem !== null) return tsProblem;
  if (row.prevTs !== null && !(Number.isSafeInteger(row.prevTs) && row.prevTs >= 0 && row.prevTs < row.ts)) {
    return { reason: `prevTs ${String(row.prevTs)} must be null or an integer in [0, ts)` };
  }
  if (row.value === null) return rules.allowDeletions ? null : { reason: "a deletion in current state" };
  if (typeof row.value !== "string") return { reason: "value must be encoded JSON text or null" };
  return valueSizeProblem(row.value);
}

function indexUpdateProblem(row: IndexUpdate, rules: RecordRules): Problem | null {
  if (typeof row !== "object" || row === null) return { reason: "not an object" };
  if (!Number.isSafeInteger(row.indexId) || row.indexId < 0) {
    return { reason: `indexId ${String(row.indexId)} must be a non-negative integer` };
  }
  const keyProblem = rules.deep === false ? (row.key instanceof Uint8Array ? null : { reason: "key must be a Uint8Array" }) : indexKeyProblem(row.key);
  if (keyProblem !== null) return keyProblem;
  const tsProblem = timestampProblem(row.ts, rules);
  if (tsProblem !== null) return tsProblem;
  if (row.docId === null) return rules.allowDeletions ? null : { reason: "a removed key in current state" };
  if (rules.deep === false) return typeof row.docId === "string" ? null : { reason: "docId must be a string or null" };
  if (rules.validIds.has(row.docId)) return null;
  // An index may point at a document of any table: the id only has to be valid.
  return canonicalIdProblem(row.docId, () => tableNumberOfId(row.docId));
}

function receiptProblem(row: ClientReceipt, rules: RecordRules): Problem | null {
  if (typeof row !== "object" || row === null) return { reason: "not an object" };
  if (typeof row.clientId !== "string" || row.clientId.length === 0) return { reason: "clientId must be a non-empty string" };
  if (!Number.isSafeInteger(row.seq) || row.seq < 0) return { reason: `seq ${String(row.seq)} must be a non-negative integer` };
  if (typeof row.result !== "string") return { reason: "result must be JSON text" };
  if (row.route !== null && !(row.route instanceof Uint8Array && row.route.byteLength === ROUTE_BYTES)) {
    return { reason: `route must be null or a Uint8Array of ${ROUTE_BYTES} bytes` };
  }
  if (row.owner !== undefined && typeof row.owner !== "string") return { reason: "owner must be a string" };
  if (row.floorSeq !== undefined && !(Number.isSafeInteger(row.floorSeq) && row.floorSeq >= 0 && row.floorSeq <= row.seq)) {
    return { reason: `floorSeq ${String(row.floorSeq)} must be an integer from 0 to the receipt's seq` };
  }
  return timestampProblem(row.ts, rules);
}

function indexKeyProblem(key: Uint8Array): Problem | null {
  if (!(key instanceof Uint8Array)) return { reason: "key must be a Uint8Array" };
  try {
    // Keys read back from SQLite are Buffers; the check only reads them, and the decoder
    // it may fall back to reads through a plain view of its own.
    validateIndexKey(key);
    return null;
  } catch (error) {
    return { reason: error instanceof Error ? error.message : String(error), cause: error };
  }
}

function timestampProblem(ts: number, rules: RecordRules): Problem | null {
  if (!Number.isSafeInteger(ts) || ts < 0) return { reason: `ts ${String(ts)} must be a non-negative integer` };
  if (ts < rules.minTs) {
    return { reason: `ts ${ts} is below the readable floor ${rules.minTs} (history there was pruned or restored)` };
  }
  return null;
}

/**
 * Ids are stored as given, so they must be in canonical form: the same document spelled
 * two ways would be two documents.
 */
function canonicalIdProblem(id: unknown, parse: () => unknown): Problem | null {
  try {
    parse();
    if (!isCanonicalSpelling(id as string)) return { reason: `document id ${String(id)} is not in canonical (lowercase) form` };
    return null;
  } catch (error) {
    return { reason: error instanceof Error ? error.message : String(error), cause: error };
  }
}

function valueSizeProblem(value: string): Problem | null {
  // UTF-8 needs at most 3 bytes per UTF-16 unit: short strings need no byte count.
  if (value.length * 3 <= DOCUMENT_BYTES_MAX) return null;
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes <= DOCUMENT_BYTES_MAX) return null;
  return { reason: `value is ${bytes} bytes, more than DOCUMENT_BYTES_MAX (${DOCUMENT_BYTES_MAX})` };
}
