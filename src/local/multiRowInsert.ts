/**
 * Rows per multi-row INSERT, for folds and restores alike: one statement step per 64 rows
 * instead of one per row (binding and stepping a statement costs about as much as
 * inserting a small row). 64 rows of 5 columns stay far below SQLite's parameter limit.
 */
export const ROWS_PER_STATEMENT = 64;

export interface MultiRowInsert {
  readonly verb: "INSERT" | "INSERT OR REPLACE";
  readonly table: string;
  readonly columns: readonly string[];
  /**
   * Columns bound as UTF-8 bytes, taken as `CAST(? AS TEXT)`: the bytes become TEXT
   * unchanged (the database encoding is UTF-8); NULL stays NULL (FoldJob.ts).
   */
  readonly textColumns?: readonly string[];
}

/** `verb INTO table (columns) VALUES (…), …` for `rows` rows, parameters row after row. */
export function multiRowInsertSql({ verb, table, columns, textColumns = [] }: MultiRowInsert, rows: number): string {
  const row = `(${columns.map((column) => (textColumns.includes(column) ? "CAST(? AS TEXT)" : "?")).join(", ")})`;
  return `${verb} INTO ${table} (${columns.join(", ")}) VALUES ${Array.from({ length: rows }, () => row).join(", ")}`;
}
