import type { AdminApi } from "./adminApi.js";
import type { HistoryAnswer } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { prettyJson } from "./format.js";
import { usePolled } from "./usePolled.js";

const REVISIONS_SHOWN = 20;

/** A document's revisions in this node's history window, newest first (re-read whenever the document changes: `version`). */
export function HistoryList({ api, id, version }: { readonly api: AdminApi; readonly id: string; readonly version: string }) {
  const history = usePolled(() => api.get<HistoryAnswer>("history", { id, limit: REVISIONS_SHOWN }), `${id}\n${version}`);
  return (
    <section class="history" data-testid="history">
      <h3>History</h3>
      <ErrorLine error={history.error} testId="history-error" />
      {history.data !== null && (
        <>
          {history.data.revisions.length === 0 && <p class="muted">No revisions in this node's window.</p>}
          <ol>
            {history.data.revisions.map((revision) => (
              <li key={revision.ts}>
                <details>
                  <summary>
                    ts <code>{revision.ts}</code> {revision.value === null ? <em>deleted</em> : null}
                  </summary>
                  {revision.value !== null && <pre class="json">{prettyJson(revision.value)}</pre>}
                </details>
              </li>
            ))}
          </ol>
          <p class="muted small">Revisions before ts {history.data.minReadableTs} were pruned.</p>
        </>
      )}
    </section>
  );
}
