/**
 * What every benchmark prints on stdout: a table for a reader, then exactly one line of
 * JSON with every figure for a script. The table's layout: titled sections of rows
 * (measurement, value, target), columns padded to their widest cell, sub-tables of
 * columns, and the number formats every section shares.
 */
export type Row = readonly [measurement: string, value: string, target: string];

/** Lines printed as they are (indented), such as a sub-table with columns of its own. */
export interface Block {
  readonly block: readonly string[];
}

/** A section title (a string), a row, or a block. */
export type TableLine = Row | string | Block;

export function formatTable(lines: readonly TableLine[]): string {
  const rows = lines.filter((line): line is Row => Array.isArray(line));
  const widths = [0, 1, 2].map((column) => Math.max(0, ...rows.map((row) => row[column]!.length)));
  return lines
    .map((line) => {
      if (typeof line === "string") return `\n${line}`;
      if (!Array.isArray(line)) return (line as Block).block.map((text) => `  ${text}`.trimEnd()).join("\n");
      const row = line as Row;
      return `  ${row[0].padEnd(widths[0]!)}  ${row[1].padStart(widths[1]!)}  ${row[2]}`.trimEnd();
    })
    .join("\n")
    .concat("\n");
}

/** Prints the report: the table (already formatted), then `figures` as one line of JSON. */
export function printReport(table: string, figures: unknown): void {
  process.stdout.write(table);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

export interface ColumnsLayout {
  /** How many columns, from the first, are left-aligned (the rest right-aligned); 1 unless said. */
  readonly leftAligned?: number;
  /** A line of dashes under the header. */
  readonly rule?: boolean;
}

/** Columns padded to their widest cell, header first; the first left-aligned and the rest right-aligned unless `layout` says. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[], layout: ColumnsLayout = {}): Block {
  const leftAligned = layout.leftAligned ?? 1;
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)));
  const line = (row: readonly string[]) =>
    row.map((cell, column) => (column < leftAligned ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
  const rule = layout.rule === true ? [widths.map((width) => "-".repeat(width)).join("  ")] : [];
  return { block: [line(header), ...rule, ...rows.map(line)] };
}

export function latencies(summary: { p50Ms: number; p99Ms: number }): string {
  return `${ms(summary.p50Ms)} / ${ms(summary.p99Ms)}`;
}

export function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

export function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

export function verdict(met: boolean, target: string): string {
  return `${target} ${met ? "met" : "MISSED"}`;
}

/** "PutObject 1.02, GetObject 1" from per-operation counts. */
export function perOperation(counts: Readonly<Record<string, number>>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? "none" : entries.map(([operation, count]) => `${operation} ${count}`).join(", ");
}
