import type { Statement, Transaction } from "better-sqlite3";
import type { SqliteDatabase } from "./schema.js";
import type { FoldJob, FoldSql } from "./FoldJob.js";

export const ABORT: 0;
export const CLOSED: 1;

export interface FoldStatements {
  readonly rowsPerStatement: number;
  readonly document: Statement;
  readonly documents: Statement;
  readonly indexEntry: Statement;
  readonly indexEntries: Statement;
  readonly receipt: Statement;
  readonly dropReceiptsBelowFloor: Statement;
  readonly meta: Statement;
  readonly transaction: Transaction<(statements: FoldStatements, job: FoldJob) => void>;
}

export function prepareFold(db: SqliteDatabase, sql: FoldSql, signals?: Int32Array | null): FoldStatements;
export function writeFold(statements: FoldStatements, job: FoldJob): void;
