import { Component } from "preact";
import { useState } from "preact/hooks";
import type { LogEntry } from "./adminTypes.js";
import { cut, duration, timeOfDay } from "./format.js";

/** How much of a line the page renders (the node already cuts lines at 8 KiB). */
const LINE_SHOWN_CHARS = 2_000;
const PREVIEW_CHARS = 160;

interface LogEntryRowProps {
  readonly entry: LogEntry;
}

/** A log entry, rendered again only when it is another entry: a batch of new ones leaves the rows shown alone. */
export class LogEntryRow extends Component<LogEntryRowProps> {
  override shouldComponentUpdate(next: LogEntryRowProps): boolean {
    return next.entry !== this.props.entry;
  }

  override render() {
    return <LogEntryView entry={this.props.entry} />;
  }
}

/** One function call's log entry: a summary line; expanded, its console lines and its error with the stack. */
function LogEntryView({ entry }: LogEntryRowProps) {
  const [open, setOpen] = useState(false);
  const preview = entry.error !== undefined ? `${entry.error.code}: ${entry.error.message}` : (entry.lines[0]?.text ?? "");
  return (
    <div class={`log-entry level-${entry.level}${open ? " open" : ""}`} data-testid="log-entry" data-path={entry.path}>
      <button type="button" class="log-summary" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class="time">{timeOfDay(entry.time)}</span>
        <span class={`badge level-${entry.level}`}>{entry.level}</span>
        <span class={`badge kind-${entry.kind}`}>{entry.kind}</span>
        <code class="path">{entry.path}</code>
        <span class={`outcome outcome-${entry.outcome}`}>{entry.outcome}</span>
        <span class="duration">{duration(entry.durationMs)}</span>
        <span class="preview muted">{cut(preview.split("\n")[0] ?? "", PREVIEW_CHARS)}</span>
      </button>
      {open && (
        <div class="log-detail">
          <p class="muted small">
            request <code>{entry.requestId}</code> · entry {entry.id} · {new Date(entry.time).toISOString()}
          </p>
          {entry.lines.length > 0 && (
            <ol class="log-lines">
              {entry.lines.map((line, index) => (
                <li key={index} class={`line-${line.level}`}>
                  <span class="time">{timeOfDay(line.time)}</span> <span class="line-level">{line.level}</span> <span class="text">{cut(line.text, LINE_SHOWN_CHARS)}</span>
                </li>
              ))}
            </ol>
          )}
          {entry.truncatedLines !== undefined && entry.truncatedLines > 0 && <p class="muted small">{entry.truncatedLines} more lines were not kept.</p>}
          {entry.error !== undefined && (
            <div class="log-error">
              <strong>{entry.error.code}</strong>: {cut(entry.error.message, LINE_SHOWN_CHARS)}
              {entry.error.stack !== undefined && <pre>{cut(entry.error.stack, LINE_SHOWN_CHARS * 4)}</pre>}
            </div>
          )}
        </div>
      )}
    </div>
  );
}
