import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { AdminApi } from "./adminApi.js";
import { subscribeLogs, type LiveSession } from "./adminClient.js";
import { LOG_LEVELS, type FunctionInfo, type LogEntry, type LogLevel, type LogsAnswer } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { LogEntryRow } from "./LogEntryRow.js";
import { matchesFilter, mergeEntries, NO_FILTER, type LogFilter } from "./logFilter.js";
import { usePolled } from "./usePolled.js";
import { pageClock, type PageTimer } from "./pageClock.js";

/** The most entries the page holds; older ones fall off (the node's ring is bounded too). */
export const LOG_ENTRIES_MAX = 1_000;
/** Live entries are rendered in batches at most this often, so a flood of logs keeps the page responsive. */
const RENDER_EVERY_MS = 250;
/** Typing in a filter re-reads the node's ring after this pause. */
const FILTER_SETTLE_MS = 300;
/** Within this distance of the bottom the list follows new entries. */
const FOLLOW_SLACK_PX = 40;

/**
 * The node's function logs: what its ring holds (`GET /api/admin/logs`, filtered there),
 * then every new entry streamed over the admin session (filtered here the same way),
 * newest at the bottom, at most LOG_ENTRIES_MAX, each expandable.
 */
export function LogsView({ api, live }: { readonly api: AdminApi; readonly live: LiveSession }) {
  const [filter, setFilter] = useState<LogFilter>(NO_FILTER);
  const [entries, setEntries] = useState<LogEntry[]>([]);
  const [dropped, setDropped] = useState({ ring: 0, stream: 0 });
  const [loadError, setLoadError] = useState<unknown>(null);
  const [streamError, setStreamError] = useState<unknown>(null);
  const [streaming, setStreaming] = useState(false);
  const functions = usePolled(() => api.get<{ functions: FunctionInfo[] }>("functions"), "functions");
  const filterRef = useRef(filter);
  filterRef.current = filter;
  const pending = useRef<LogEntry[]>([]);
  const flushTimer = useRef<PageTimer | null>(null);
  const list = useRef<HTMLDivElement>(null);
  const following = useRef(true);

  // The ring, filtered by the node, whenever the filter settles.
  useEffect(() => {
    let stale = false;
    const timer = pageClock.after(FILTER_SETTLE_MS, () => {
      api
        .get<LogsAnswer>("logs", { function: filter.function.trim(), level: filter.level, text: filter.text.trim(), limit: LOG_ENTRIES_MAX })
        .then(
          (answer) => {
            if (stale) return;
            setLoadError(null);
            setDropped((previous) => ({ ...previous, ring: answer.dropped }));
            setEntries((shown) => mergeEntries(shown.filter((entry) => matchesFilter(entry, filter)), answer.entries, LOG_ENTRIES_MAX));
          },
          (error: unknown) => !stale && setLoadError(error),
        );
    });
    setEntries((shown) => shown.filter((entry) => matchesFilter(entry, filter)));
    return () => {
      stale = true;
      timer.cancel();
    };
  }, [api, filter]);

  // The live stream, for as long as the view is open.
  useEffect(() => {
    if (live.client === null) return;
    const flush = () => {
      flushTimer.current = null;
      const batch = pending.current.filter((entry) => matchesFilter(entry, filterRef.current));
      pending.current = [];
      if (batch.length > 0) setEntries((shown) => mergeEntries(shown, batch, LOG_ENTRIES_MAX));
    };
    let stop: () => void;
    try {
      stop = subscribeLogs(live.client, (batch) => {
        // Only the newest LOG_ENTRIES_MAX can ever be shown: the rest is not kept.
        pending.current = pending.current.concat(batch.entries).slice(-LOG_ENTRIES_MAX);
        // The node counts what this connection missed since it started following: a running total.
        if (batch.dropped > 0) setDropped((previous) => ({ ...previous, stream: Math.max(previous.stream, batch.dropped) }));
        flushTimer.current ??= pageClock.after(RENDER_EVERY_MS, flush);
      });
      setStreaming(true);
      setStreamError(null);
    } catch (error) {
      setStreamError(error);
      return;
    }
    return () => {
      stop();
      setStreaming(false);
      flushTimer.current?.cancel();
      flushTimer.current = null;
      pending.current = [];
    };
  }, [live.client]);

  useLayoutEffect(() => {
    const element = list.current;
    if (element !== null && following.current) element.scrollTop = element.scrollHeight;
  }, [entries]);

  const update = (change: Partial<LogFilter>) => setFilter((previous) => ({ ...previous, ...change }));
  const paths = functions.data?.functions.map((fn) => fn.path) ?? [];
  const modules = [...new Set(paths.map((path) => `${path.slice(0, path.lastIndexOf(":"))}:`))];

  return (
    <section class="logs">
      <div class="heading">
        <h1>Logs</h1>
        <span class={`badge mode-${streaming ? "live" : "once"}`} data-testid="logs-mode">
          {streaming ? "live" : live.client === null && live.error === null ? "connecting…" : "not live"}
        </span>
        <span class="muted small" data-testid="logs-count">
          {entries.length} shown{dropped.ring + dropped.stream > 0 ? ` · ${dropped.ring} fell out of the node's ring · ${dropped.stream} missed by this page` : ""}
        </span>
      </div>
      <form class="filter" onSubmit={(event) => event.preventDefault()}>
        <label>
          Function
          <input
            list="log-functions"
            data-testid="logs-function"
            placeholder="module:name or module:"
            value={filter.function}
            onInput={(event) => update({ function: event.currentTarget.value })}
          />
          <datalist id="log-functions">
            {[...modules, ...paths].map((path) => (
              <option key={path} value={path} />
            ))}
          </datalist>
        </label>
        <label>
          Level
          <select data-testid="logs-level" value={filter.level} onChange={(event) => update({ level: event.currentTarget.value as LogLevel })}>
            {LOG_LEVELS.map((level) => (
              <option key={level} value={level}>
                {level === "info" ? "all" : `${level} and above`}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Text
          <input data-testid="logs-text" placeholder="in the path, request id, lines, error" value={filter.text} onInput={(event) => update({ text: event.currentTarget.value })} />
        </label>
        <button type="button" onClick={() => setEntries([])}>
          Clear
        </button>
      </form>
      <ErrorLine error={loadError} testId="logs-error" />
      <ErrorLine error={streamError ?? (live.client === null ? live.error : null)} testId="logs-stream-error" />
      <div
        class="log-list"
        ref={list}
        data-testid="log-list"
        onScroll={(event) => {
          const element = event.currentTarget;
          following.current = element.scrollHeight - element.scrollTop - element.clientHeight < FOLLOW_SLACK_PX;
        }}
      >
        {entries.length === 0 && <p class="muted empty">No entries{filter === NO_FILTER ? "" : " match the filter"}.</p>}
        {entries.map((entry) => (
          <LogEntryRow key={entry.id} entry={entry} />
        ))}
      </div>
    </section>
  );
}
