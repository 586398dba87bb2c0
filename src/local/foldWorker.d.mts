import type { Statement, Transaction } from "better-sqlite3";
import type { SqliteDatabase } from "./schema.js";
import type { FoldJob, FoldSql } from "./FoldJob.js";

export interface FoldStatements {
  readonly document: Statement;
  readonly indexEntry: Statement;
  readonly receipt: Statement;
  readonly history: Statement;
  readonly meta: Statement;
  readonly transaction: Transaction<(statements: FoldStatements, job: FoldJob) => void>;
}

export function prepareFold(db: SqliteDatabase, sql: FoldSql): FoldStatements;
export function writeFold(statements: FoldStatements, job: FoldJob): void;
