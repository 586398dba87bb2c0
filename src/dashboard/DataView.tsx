import type { AdminApi } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { TablesAnswer } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { routeHref } from "./hashRoute.js";
import { TablesList } from "./TablesList.js";
import { TableView } from "./TableView.js";
import { usePolled } from "./usePolled.js";

/** How often the document counts are read again (the rows themselves are live). */
const TABLES_REFRESH_MS = 10_000;

interface DataViewProps {
  readonly api: AdminApi;
  readonly live: LiveSession;
  /** [] the tables; [table] one table; [table, id] a document of it. */
  readonly parts: readonly string[];
}

/** The tables, or one table (live) with a document beside it. */
export function DataView({ api, live, parts }: DataViewProps) {
  const tables = usePolled(() => api.get<TablesAnswer>("tables"), "tables", TABLES_REFRESH_MS);
  const [tableName, documentId] = parts;
  const table = tables.data?.tables.find((candidate) => candidate.name === tableName);

  if (tableName === undefined) {
    return (
      <section>
        <div class="heading">
          <h1>Data</h1>
          <button type="button" onClick={tables.reload} disabled={tables.loading}>
            Refresh
          </button>
        </div>
        <ErrorLine error={tables.error} />
        {tables.data !== null && <TablesList answer={tables.data} />}
      </section>
    );
  }
  return (
    <section>
      <div class="heading">
        <h1>
          <a href={routeHref("data")}>Data</a> / <span data-testid="table-name">{tableName}</span>
        </h1>
        {table?.documents !== undefined && <span class="muted">{table.documents.toLocaleString("en-US")} documents</span>}
      </div>
      <ErrorLine error={tables.error} />
      {tables.data !== null && table === undefined && <p class="error">There is no table {JSON.stringify(tableName)}.</p>}
      {table !== undefined && <TableView key={table.name} api={api} live={live} table={table} selectedId={documentId ?? null} />}
    </section>
  );
}
