import { useState } from "preact/hooks";
import type { WireValue } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { parseJsonText } from "./wireValue.js";

interface JsonEditorProps {
  readonly initial: string;
  readonly saveLabel: string;
  readonly testId: string;
  /** Saves the parsed value; a rejection (the validator's message) is shown beside the editor, which stays open. */
  readonly onSave: (value: WireValue) => Promise<void>;
  readonly onCancel: () => void;
}

/** A document as JSON text (Cairn's value encoding), saved through an admin mutation. */
export function JsonEditor({ initial, saveLabel, testId, onSave, onCancel }: JsonEditorProps) {
  const [text, setText] = useState(initial);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setBusy(true);
    try {
      await onSave(parseJsonText(text, "the document"));
      setError(null);
    } catch (problem) {
      setError(problem);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="editor" data-testid={testId}>
      <textarea
        spellcheck={false}
        rows={Math.min(24, Math.max(6, text.split("\n").length + 1))}
        value={text}
        data-testid={`${testId}-text`}
        onInput={(event) => setText(event.currentTarget.value)}
      />
      <div class="actions">
        <button class="primary" type="button" disabled={busy} data-testid={`${testId}-save`} onClick={() => void save()}>
          {busy ? "Saving…" : saveLabel}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <ErrorLine error={error} testId={`${testId}-error`} />
    </div>
  );
}
