import { functionReference, type Value } from "cairn/client";
import { useEffect, useRef, useState } from "preact/hooks";
import type { AdminApi } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { WireValue } from "./adminTypes.js";
import { fromWire, toWire } from "./wireValue.js";

export interface LiveResult {
  /** The latest result in the JSON value encoding (undefined: none yet). */
  readonly value: WireValue | undefined;
  readonly error: unknown;
  /** "live" (subscribed over the admin session) or "once" (read over HTTP: the session is unavailable). */
  readonly mode: "live" | "once" | "waiting";
  /** Results received so far (a live query's updates). */
  readonly updates: number;
}

/**
 * A query's result, kept current: subscribed through the client library on the admin
 * session (it changes as commits land); when there is no admin session (`live.error`),
 * read once through `POST /api/admin/query` so the view still shows something. `args`
 * (in the JSON value encoding; null: nothing is asked) re-subscribe when their JSON changes.
 */
export function useLiveQuery(live: LiveSession, api: AdminApi, path: string, args: WireValue | null): LiveResult {
  const [result, setResult] = useState<LiveResult>({ value: undefined, error: null, mode: "waiting", updates: 0 });
  const argsKey = JSON.stringify(args);
  const argsRef = useRef(args);
  argsRef.current = args;
  const session = live.client !== null ? "live" : live.error !== null ? "once" : "waiting";

  useEffect(() => {
    const current = argsRef.current;
    if (current === null) return;
    setResult({ value: undefined, error: null, mode: session, updates: 0 });
    if (session === "live") {
      let decoded: Value;
      try {
        decoded = fromWire(current);
      } catch (error) {
        setResult((previous) => ({ ...previous, error }));
        return;
      }
      return live.client!.subscribe(
        functionReference<"query">(path),
        decoded,
        (value: Value) => setResult((previous) => ({ value: toWire(value), error: null, mode: "live", updates: previous.updates + 1 })),
        (error) => setResult((previous) => ({ ...previous, error, mode: "live" })),
      );
    }
    if (session === "once") {
      let stale = false;
      api.call("query", path, current).then(
        (answer) => !stale && setResult({ value: answer.value, error: null, mode: "once", updates: 1 }),
        (error: unknown) => !stale && setResult((previous) => ({ ...previous, error, mode: "once" })),
      );
      return () => void (stale = true);
    }
    return undefined;
  }, [session, live.client, path, argsKey]);

  return result;
}
