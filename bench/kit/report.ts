/**
 * The benchmark table's layout: titled sections of rows (measurement, value, target),
 * columns padded to their widest cell, and the number formats every section shares.
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

/** Columns right-aligned to their widest cell (the first left-aligned), header first. */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): Block {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)));
  const line = (row: readonly string[]) =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
  return { block: all.map(line) };
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
