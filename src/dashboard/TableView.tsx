import { useState } from "preact/hooks";
import type { AdminApi } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { TableInfo, WireValue } from "./adminTypes.js";
import { DocumentView } from "./DocumentView.js";
import { ErrorLine } from "./ErrorLine.js";
import { routeHref } from "./hashRoute.js";
import { JsonEditor } from "./JsonEditor.js";
import { DEFAULT_INDEX, emptyDraft, pageArgs, type FilterDraft, type PageQuery } from "./pageQuery.js";
import { RangeFilter } from "./RangeFilter.js";
import { RowsTable } from "./RowsTable.js";
import { useLiveQuery } from "./useLiveQuery.js";

const PAGE_SIZES = [25, 50, 100] as const;

interface TableViewProps {
  readonly api: AdminApi;
  readonly live: LiveSession;
  readonly table: TableInfo;
  readonly selectedId: string | null;
}

interface PageResult {
  readonly page: readonly WireValue[];
  readonly isDone: boolean;
  readonly continueCursor: string | null;
}

/**
 * One table, live: a page of `_system:page` subscribed through the client (rows change as
 * commits land), sorted and filtered by an index, paged forward and back (the cursors
 * of the pages before are kept), with Insert, and the selected document beside it.
 */
export function TableView({ api, live, table, selectedId }: TableViewProps) {
  const firstIndex = table.indexes.some((index) => index.name === DEFAULT_INDEX) ? DEFAULT_INDEX : (table.indexes[0]?.name ?? DEFAULT_INDEX);
  const [draft, setDraft] = useState<FilterDraft>(() => emptyDraft(firstIndex));
  const [query, setQuery] = useState<PageQuery>({ index: firstIndex, order: "asc", eq: [], lower: null, upper: null });
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [numItems, setNumItems] = useState<number>(PAGE_SIZES[0]);
  const [inserting, setInserting] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);

  const cursor = cursors[cursors.length - 1]!;
  const result = useLiveQuery(live, api, "_system:page", pageArgs(table.name, query, numItems, cursor));
  const page = pageResultOf(result.value);
  const select = (id: string) => (location.hash = routeHref("data", table.name, id));

  return (
    <div class={selectedId !== null ? "split" : undefined}>
      <div class="pane">
        <RangeFilter
          indexes={table.indexes}
          initial={draft}
          onApply={(next, nextDraft) => {
            setQuery(next);
            setDraft(nextDraft);
            setCursors([null]);
          }}
        />
        <div class="toolbar">
          <button type="button" data-testid="page-back" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
            ← Back
          </button>
          <span data-testid="page-number">page {cursors.length}</span>
          <button
            type="button"
            data-testid="page-forward"
            disabled={page === null || page.isDone || page.continueCursor === null}
            onClick={() => page !== null && setCursors([...cursors, page.continueCursor])}
          >
            Forward →
          </button>
          <select
            aria-label="rows per page"
            value={numItems}
            onChange={(event) => {
              setNumItems(Number(event.currentTarget.value));
              setCursors([null]);
            }}
          >
            {PAGE_SIZES.map((size) => (
              <option key={size} value={size}>
                {size} / page
              </option>
            ))}
          </select>
          <span class={`badge mode-${result.mode}`} data-testid="rows-mode" title={result.mode === "once" ? "read once: the admin session is unavailable" : undefined}>
            {result.mode === "live" ? `live · ${result.updates} update${result.updates === 1 ? "" : "s"}` : result.mode === "once" ? "not live" : "connecting…"}
          </span>
          <span class="spacer" />
          <button type="button" class="primary" data-testid="insert" onClick={() => setInserting(!inserting)}>
            Insert
          </button>
        </div>
        {result.mode === "once" && <ErrorLine error={live.error} testId="live-error" />}
        {inserting && (
          <JsonEditor
            initial={"{\n  \n}"}
            saveLabel="Insert"
            testId="insert-editor"
            onCancel={() => setInserting(false)}
            onSave={async (document) => {
              const answer = await api.call("mutation", "_system:insert", { table: table.name, document });
              setInserting(false);
              setNotice(`inserted ${String(answer.value)}`);
              if (typeof answer.value === "string") select(answer.value);
            }}
          />
        )}
        {notice !== null && (
          <p class="notice" data-testid="notice">
            {notice}
          </p>
        )}
        <ErrorLine error={result.error} testId="rows-error" />
        {page !== null && <RowsTable rows={page.page} selectedId={selectedId} onSelect={select} />}
      </div>
      {selectedId !== null && (
        <div class="pane side">
          <DocumentView key={selectedId} api={api} live={live} table={table.name} id={selectedId} onDeleted={() => setNotice(`deleted ${selectedId}`)} />
        </div>
      )}
    </div>
  );
}

function pageResultOf(value: WireValue | undefined): PageResult | null {
  if (value === null || value === undefined || typeof value !== "object" || Array.isArray(value) || !Array.isArray(value["page"])) return null;
  const continueCursor = value["continueCursor"];
  return { page: value["page"], isDone: value["isDone"] === true, continueCursor: typeof continueCursor === "string" ? continueCursor : null };
}
