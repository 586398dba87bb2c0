import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { pageClock } from "./pageClock.js";

export interface Polled<T> {
  readonly data: T | null;
  readonly error: unknown;
  readonly loading: boolean;
  readonly reload: () => void;
}

/**
 * An admin route's answer, loaded when `key` changes and again every `everyMs` (null:
 * only on demand). The last good answer stays shown beside a later failure; an answer
 * that arrives after a newer request started is dropped.
 */
export function usePolled<T>(load: () => Promise<T>, key: string, everyMs: number | null = null): Polled<T> {
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({ data: null, error: null, loading: true });
  const latest = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const reload = useCallback(() => {
    const request = ++latest.current;
    setState((previous) => ({ ...previous, loading: true }));
    loadRef.current().then(
      (data) => request === latest.current && setState({ data, error: null, loading: false }),
      (error: unknown) => request === latest.current && setState((previous) => ({ data: previous.data, error, loading: false })),
    );
  }, []);

  useEffect(() => {
    setState({ data: null, error: null, loading: true });
    reload();
    if (everyMs === null) return () => void ++latest.current;
    const timer = pageClock.every(everyMs, reload);
    return () => {
      timer.cancel();
      ++latest.current;
    };
  }, [key, everyMs, reload]);

  return { ...state, reload };
}
