import type { WireValue } from "./adminTypes.js";
import { clockTime, shortValue } from "./format.js";

/** The most columns a page shows (documents of a schemaless table can hold many fields). */
const COLUMNS_MAX = 14;
const CELL_CHARS_MAX = 60;

interface RowsTableProps {
  readonly rows: readonly WireValue[];
  readonly selectedId: string | null;
  readonly onSelect: (id: string) => void;
}

/** A page of documents as a table: `_id` and `_creationTime` first, then the fields in the order they first appear; values shortened. */
export function RowsTable({ rows, selectedId, onSelect }: RowsTableProps) {
  const documents = rows.filter(isObject);
  const columns = columnsOf(documents);
  return (
    <div class="scroll">
      <table class="grid rows" data-testid="rows">
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column}>{column}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {documents.map((document) => {
            const id = typeof document["_id"] === "string" ? document["_id"] : "";
            return (
              <tr
                key={id}
                class={id === selectedId ? "selected" : undefined}
                data-testid="row"
                data-id={id}
                tabIndex={0}
                onClick={() => onSelect(id)}
                onKeyDown={(event) => event.key === "Enter" && onSelect(id)}
              >
                {columns.map((column) => (
                  <td key={column} class={column.startsWith("_") ? "system" : undefined}>
                    {column === "_creationTime" && typeof document[column] === "number"
                      ? clockTime(document[column])
                      : shortValue(document[column], CELL_CHARS_MAX)}
                  </td>
                ))}
              </tr>
            );
          })}
        </tbody>
      </table>
      {documents.length === 0 && <p class="muted empty">No documents on this page.</p>}
    </div>
  );
}

function isObject(value: WireValue): value is { [field: string]: WireValue } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function columnsOf(documents: readonly { [field: string]: WireValue }[]): string[] {
  const columns = ["_id", "_creationTime"];
  for (const document of documents) {
    for (const field of Object.keys(document)) {
      if (columns.length >= COLUMNS_MAX) return columns;
      if (!columns.includes(field)) columns.push(field);
    }
  }
  return columns;
}
