import type { TablesAnswer } from "./adminTypes.js";
import { count } from "./format.js";
import { routeHref } from "./hashRoute.js";

/** Every table with its document count (at the answer's readTs) and indexes. */
export function TablesList({ answer }: { readonly answer: TablesAnswer }) {
  if (answer.tables.length === 0) return <p class="muted">The schema declares no tables.</p>;
  return (
    <div class="scroll">
      <table class="grid" data-testid="tables">
        <thead>
          <tr>
            <th>Table</th>
            <th class="number">Documents</th>
            <th>Shard key</th>
            <th>Indexes</th>
          </tr>
        </thead>
        <tbody>
          {answer.tables.map((table) => (
            <tr key={table.name}>
              <td>
                <a href={routeHref("data", table.name)} data-testid={`table-${table.name}`}>
                  {table.name}
                </a>
              </td>
              <td class="number">{count(table.documents)}</td>
              <td>{table.shardKey ?? <span class="muted">—</span>}</td>
              <td>
                <div class="indexes">
                {table.indexes.map((index) => (
                  <span key={index.name} class={`chip${index.system ? " system" : ""}`} title={index.state}>
                    {index.name}
                    <span class="muted"> ({index.fields.join(", ")})</span>
                    {index.state === "backfilling" && <em> backfilling</em>}
                  </span>
                ))}
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted small">Counted at ts {answer.readTs} over this node's copy of every shard.</p>
    </div>
  );
}
