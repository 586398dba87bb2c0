import type { AdminApi } from "./adminApi.js";
import type { LiveSession } from "./adminClient.js";
import type { FunctionInfo } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { FunctionRunner } from "./FunctionRunner.js";
import { routeHref } from "./hashRoute.js";
import { usePolled } from "./usePolled.js";

interface FunctionsViewProps {
  readonly api: AdminApi;
  readonly live: LiveSession;
  readonly selected: string | null;
}

/** Every function of the app, by module, with its kind, visibility and arguments; the runner for the one picked. */
export function FunctionsView({ api, live, selected }: FunctionsViewProps) {
  const functions = usePolled(() => api.get<{ functions: FunctionInfo[] }>("functions"), "functions");
  const list = functions.data?.functions ?? [];
  const chosen = list.find((candidate) => candidate.path === selected);
  return (
    <section>
      <div class="heading">
        <h1>Functions</h1>
        <span class="muted">{list.length > 0 ? `${list.length} functions` : ""}</span>
      </div>
      <ErrorLine error={functions.error} />
      <div class={chosen !== undefined ? "split" : undefined}>
        <div class="pane">
          {groupByModule(list).map(([module, members]) => (
            <section key={module} class="module">
              <h2>{module}</h2>
              <ul class="functions" data-testid={`module-${module}`}>
                {members.map((fn) => (
                  <li key={fn.path} class={fn.path === selected ? "selected" : undefined}>
                    <a href={routeHref("functions", fn.path)} data-testid={`function-${fn.path}`}>
                      {fn.path.slice(module.length + 1)}
                    </a>
                    <span class={`badge kind-${fn.kind}`}>{fn.kind}</span>
                    {fn.visibility === "internal" && <span class="badge internal">internal</span>}
                    <code class="signature muted" title={JSON.stringify(fn.args)}>
                      {argsSummary(fn.args)}
                    </code>
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </div>
        {chosen !== undefined && (
          <div class="pane side">
            <FunctionRunner key={chosen.path} api={api} live={live} fn={chosen} />
          </div>
        )}
      </div>
      {selected !== null && functions.data !== null && chosen === undefined && <p class="error">There is no function {JSON.stringify(selected)}.</p>}
    </section>
  );
}

function groupByModule(functions: readonly FunctionInfo[]): [string, FunctionInfo[]][] {
  const modules = new Map<string, FunctionInfo[]>();
  for (const fn of functions) {
    const module = fn.path.slice(0, fn.path.lastIndexOf(":"));
    modules.set(module, [...(modules.get(module) ?? []), fn]);
  }
  return [...modules.entries()].sort(([left], [right]) => left.localeCompare(right));
}

/** `{channel: string, body: string}` from a JSON Schema object; "any" without a validator. */
export function argsSummary(schema: unknown): string {
  if (schema === null || schema === undefined) return "(any args)";
  const properties = (schema as { properties?: Record<string, unknown> }).properties;
  if (properties === undefined) return "(args)";
  const required = new Set((schema as { required?: string[] }).required ?? []);
  const fields = Object.entries(properties).map(([name, property]) => `${name}${required.has(name) ? "" : "?"}: ${typeName(property)}`);
  return `{${fields.join(", ")}}`;
}

function typeName(schema: unknown): string {
  if (schema === null || typeof schema !== "object") return "any";
  const described = schema as { type?: unknown; format?: unknown; table?: unknown; anyOf?: unknown[]; const?: unknown; items?: unknown };
  if (described.format === "cairn-id") return `id<${String(described.table ?? "")}>`;
  if (described.const !== undefined) return JSON.stringify(described.const);
  if (Array.isArray(described.anyOf)) return described.anyOf.map(typeName).join(" | ");
  if (described.type === "array") return `${typeName(described.items)}[]`;
  if (typeof described.type === "string") return described.type;
  if (Array.isArray(described.type)) return described.type.join(" | ");
  return "any";
}
