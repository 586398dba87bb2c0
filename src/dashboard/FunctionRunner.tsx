import { useState } from "preact/hooks";
import type { AdminApi, CallIdentity } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { CallAnswer, FunctionInfo, WireValue } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { duration, prettyJson } from "./format.js";
import { useLiveQuery } from "./useLiveQuery.js";
import { parseJsonText } from "./wireValue.js";

interface FunctionRunnerProps {
  readonly api: AdminApi;
  readonly live: LiveSession;
  readonly fn: FunctionInfo;
}

/**
 * Runs one function with JSON arguments through `POST /api/admin/{kind}`, as the admin or
 * as a given identity (subject plus optional JSON claims), and shows the result, the
 * read (or write) set's size and the time. A query can instead run live: subscribed on
 * the admin session, its result updates as commits change it (as the admin).
 */
export function FunctionRunner({ api, live, fn }: FunctionRunnerProps) {
  const [argsText, setArgsText] = useState(() => prettyJson(argsTemplate(fn.args)));
  const [runAs, setRunAs] = useState<"admin" | "identity">("admin");
  const [subject, setSubject] = useState("");
  const [claimsText, setClaimsText] = useState("");
  const [running, setRunning] = useState(false);
  const [answer, setAnswer] = useState<CallAnswer | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [liveArgs, setLiveArgs] = useState<WireValue | null>(null);
  const liveResult = useLiveQuery(live, api, fn.path, liveArgs);

  const run = async () => {
    setRunning(true);
    setError(null);
    try {
      const args = parseJsonText(argsText, "the arguments");
      const identity = runAs === "identity" ? identityOf(subject, claimsText) : undefined;
      setAnswer(await api.call(fn.kind, fn.path, args, identity));
    } catch (problem) {
      setAnswer(null);
      setError(problem);
    } finally {
      setRunning(false);
    }
  };

  const toggleLive = (on: boolean) => {
    if (!on) return setLiveArgs(null);
    try {
      setLiveArgs(parseJsonText(argsText, "the arguments"));
      setError(null);
    } catch (problem) {
      setError(problem);
    }
  };

  return (
    <article class="runner" data-testid="runner">
      <h2>
        <code>{fn.path}</code> <span class={`badge kind-${fn.kind}`}>{fn.kind}</span>
        {fn.visibility === "internal" && <span class="badge internal">internal</span>}
      </h2>
      <details>
        <summary>Arguments' validator</summary>
        <pre class="json">{fn.args === null ? "none declared: any arguments" : prettyJson(fn.args)}</pre>
      </details>
      {fn.returns !== null && fn.returns !== undefined && (
        <details>
          <summary>Result's validator</summary>
          <pre class="json">{prettyJson(fn.returns)}</pre>
        </details>
      )}
      <label class="block">
        Arguments (JSON)
        <textarea spellcheck={false} rows={5} data-testid="runner-args" value={argsText} onInput={(event) => setArgsText(event.currentTarget.value)} />
      </label>
      <fieldset class="run-as">
        <legend>Run as</legend>
        <label class="check">
          <input type="radio" name="run-as" checked={runAs === "admin"} onChange={() => setRunAs("admin")} /> admin
        </label>
        <label class="check">
          <input type="radio" name="run-as" data-testid="run-as-identity" checked={runAs === "identity"} onChange={() => setRunAs("identity")} /> a user
        </label>
        {runAs === "identity" && (
          <>
            <label>
              subject
              <input data-testid="run-as-subject" value={subject} onInput={(event) => setSubject(event.currentTarget.value)} placeholder="user-123" />
            </label>
            <label class="block">
              claims (JSON object, optional)
              <input value={claimsText} onInput={(event) => setClaimsText(event.currentTarget.value)} placeholder='{"email": "ada@example.com"}' />
            </label>
          </>
        )}
      </fieldset>
      <div class="actions">
        <button class="primary" type="button" data-testid="run" disabled={running || liveArgs !== null} onClick={() => void run()}>
          {running ? "Running…" : "Run"}
        </button>
        {fn.kind === "query" && (
          <label class="check" title="subscribe on the admin session: the result updates as commits land (runs as the admin)">
            <input type="checkbox" data-testid="run-live" checked={liveArgs !== null} onChange={(event) => toggleLive(event.currentTarget.checked)} /> live
          </label>
        )}
      </div>
      <ErrorLine error={error} testId="runner-error" />
      {liveArgs !== null ? (
        <div class="result" data-testid="runner-live">
          <p class="stats">
            <span class={`badge mode-${liveResult.mode}`}>{liveResult.mode === "live" ? "live" : liveResult.mode === "once" ? "not live (read once)" : "connecting…"}</span>{" "}
            {liveResult.updates} result{liveResult.updates === 1 ? "" : "s"} so far
          </p>
          <ErrorLine error={liveResult.error} testId="runner-live-error" />
          {liveResult.mode === "once" && <ErrorLine error={live.error} />}
          {liveResult.value !== undefined && <pre class="json" data-testid="runner-result">{prettyJson(liveResult.value)}</pre>}
        </div>
      ) : (
        answer !== null && (
          <div class="result">
            <p class="stats" data-testid="runner-stats">
              {answer.stats !== undefined ? duration(answer.stats.durationMs) : "—"}
              {answer.stats?.readRanges !== undefined && <> · read set {answer.stats.readRanges} range{answer.stats.readRanges === 1 ? "" : "s"}</>}
              {answer.stats?.writeRanges !== undefined && <> · write set {answer.stats.writeRanges} range{answer.stats.writeRanges === 1 ? "" : "s"}</>}
              {answer.ts !== undefined && <> · ts {answer.ts}</>}
            </p>
            <pre class="json" data-testid="runner-result">
              {prettyJson(answer.value)}
            </pre>
          </div>
        )
      )}
    </article>
  );
}

/** Arguments to start from: the validator's required fields with empty values of their types. */
function argsTemplate(schema: unknown): WireValue {
  const properties = (schema as { properties?: Record<string, unknown> } | null)?.properties;
  if (properties === undefined) return {};
  const required = (schema as { required?: unknown }).required;
  const template: { [field: string]: WireValue } = {};
  for (const name of Array.isArray(required) ? required : []) {
    if (typeof name === "string") template[name] = emptyOf(properties[name]);
  }
  return template;
}

function emptyOf(schema: unknown): WireValue {
  const described = (schema ?? {}) as { type?: unknown; anyOf?: unknown[]; const?: unknown };
  if (described.const !== undefined) return described.const as WireValue;
  if (Array.isArray(described.anyOf) && described.anyOf.length > 0) return emptyOf(described.anyOf[0]);
  const type = Array.isArray(described.type) ? described.type[0] : described.type;
  switch (type) {
    case "string":
      return "";
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return argsTemplate(schema);
    default:
      return null;
  }
}

/** The identity to run as: `subject` plus the claims typed (an Error if they are not a JSON object, or no subject). */
function identityOf(subject: string, claimsText: string): CallIdentity {
  if (subject.trim() === "") throw new Error("give the subject of the identity to run as");
  const claims = claimsText.trim() === "" ? {} : parseJsonText(claimsText, "the claims");
  if (claims === null || typeof claims !== "object" || Array.isArray(claims)) throw new Error("the claims must be a JSON object");
  return { ...claims, subject: subject.trim() };
}
