import { useState } from "preact/hooks";
import type { AdminApi } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { WireValue } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { prettyJson } from "./format.js";
import { routeHref } from "./hashRoute.js";
import { HistoryList } from "./HistoryList.js";
import { JsonEditor } from "./JsonEditor.js";
import { useLiveQuery } from "./useLiveQuery.js";

interface DocumentViewProps {
  readonly api: AdminApi;
  readonly live: LiveSession;
  readonly table: string;
  readonly id: string;
  readonly onDeleted: () => void;
}

/**
 * One document, live (`_system:get`): its JSON, Edit (`_system:replace`, the document
 * without its system fields), Delete after a confirmation (`_system:delete`), and its
 * history in this node's window. A refused edit shows the validator's message beside the
 * editor and changes nothing.
 */
export function DocumentView({ api, live, table, id, onDeleted }: DocumentViewProps) {
  const current = useLiveQuery(live, api, "_system:get", { id });
  const [editing, setEditing] = useState(false);
  const [confirmingDelete, setConfirmingDelete] = useState(false);
  const [deleteError, setDeleteError] = useState<unknown>(null);
  const document = current.value;

  const remove = async () => {
    try {
      await api.call("mutation", "_system:delete", { id });
      setConfirmingDelete(false);
      onDeleted();
      location.hash = routeHref("data", table);
    } catch (error) {
      setDeleteError(error);
    }
  };

  return (
    <article class="document" data-testid="document">
      <div class="heading">
        <h2>
          <code>{id}</code>
        </h2>
        <a href={routeHref("data", table)} class="close" title="close" aria-label="close the document">
          ×
        </a>
      </div>
      <ErrorLine error={current.error} testId="document-error" />
      {document === null && current.updates > 0 && <p class="muted">There is no such document (deleted, or not in this deployment).</p>}
      {document !== undefined && document !== null && !editing && (
        <>
          <pre class="json" data-testid="document-json">
            {prettyJson(document)}
          </pre>
          <div class="actions">
            <button type="button" data-testid="edit" onClick={() => setEditing(true)}>
              Edit
            </button>
            {!confirmingDelete ? (
              <button type="button" class="danger" data-testid="delete" onClick={() => setConfirmingDelete(true)}>
                Delete
              </button>
            ) : (
              <span class="confirm">
                Delete this document?
                <button type="button" class="danger" data-testid="delete-confirm" onClick={() => void remove()}>
                  Yes, delete
                </button>
                <button type="button" onClick={() => setConfirmingDelete(false)}>
                  No
                </button>
              </span>
            )}
          </div>
          <ErrorLine error={deleteError} testId="delete-error" />
        </>
      )}
      {document !== undefined && document !== null && editing && (
        <JsonEditor
          initial={prettyJson(withoutSystemFields(document))}
          saveLabel="Save"
          testId="edit-editor"
          onCancel={() => setEditing(false)}
          onSave={async (edited) => {
            await api.call("mutation", "_system:replace", { id, document: edited });
            setEditing(false);
          }}
        />
      )}
      <HistoryList api={api} id={id} version={JSON.stringify(document ?? null)} />
    </article>
  );
}

function withoutSystemFields(document: WireValue): WireValue {
  if (document === null || typeof document !== "object" || Array.isArray(document)) return document;
  const { _id: _ignoredId, _creationTime: _ignoredTime, ...fields } = document;
  return fields;
}
