import { useEffect, useState } from "preact/hooks";
import type { AdminApi } from "./adminApi.js";
import type { Deployment, MetricsAnswer } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { clockTime, count, duration, relative } from "./format.js";
import { MetricsChart } from "./MetricsChart.js";
import { LAG_WARNING_MS, ShardsTable } from "./ShardsTable.js";
import { usePolled } from "./usePolled.js";
import { pageClock } from "./pageClock.js";

/** How often the view re-reads the deployment and the metrics (the metrics' own interval). */
const REFRESH_MS = 10_000;

/** The node, the fleet, each shard's state, the store's requests and cost, the schema, and the last hour's charts. */
export function DeploymentView({ api }: { readonly api: AdminApi }) {
  const deployment = usePolled(() => api.get<Deployment>("deployment"), "deployment", REFRESH_MS);
  const metrics = usePolled(() => api.get<MetricsAnswer>("metrics"), "metrics", REFRESH_MS);
  const now = useNow(deployment.data);
  const found = deployment.data;

  return (
    <section class="deployment">
      <div class="heading">
        <h1>Deployment</h1>
        <button type="button" onClick={deployment.reload}>
          Refresh
        </button>
        <span class="muted small">every {REFRESH_MS / 1_000} s</span>
      </div>
      <ErrorLine error={deployment.error} testId="deployment-error" />
      {found !== null && (
        <>
          <LagBanner deployment={found} />
          <dl class="facts" data-testid="node-facts">
            <dt>Node</dt>
            <dd>
              <code>{found.node.nodeId}</code>
            </dd>
            <dt>Role</dt>
            <dd>{found.node.role}</dd>
            <dt>Status</dt>
            <dd>{found.node.status}</dd>
            <dt>URL</dt>
            <dd>{found.node.url}</dd>
            <dt>Deployment</dt>
            <dd>
              <code>{found.node.deploymentId}</code>
            </dd>
            {found.frontier !== undefined && (
              <>
                <dt>Frontier</dt>
                <dd>
                  ts {found.frontier.ts}
                  {found.frontier.heldBy !== null && (
                    <span class="muted">
                      {" "}
                      · held by shard {found.frontier.heldBy.shard} ({duration(found.frontier.heldBy.heldBackMs)} behind, writer {found.frontier.heldBy.writer ?? "none"}
                      {found.frontier.heldBy.writerLive ? "" : ", not live"})
                    </span>
                  )}
                </dd>
              </>
            )}
          </dl>
          {found.nodes !== undefined && found.nodes.length > 0 && (
            <>
              <h2>Nodes</h2>
              <div class="scroll">
                <table class="grid" data-testid="nodes">
                  <thead>
                    <tr>
                      <th>Node</th>
                      <th>Role</th>
                      <th>URL</th>
                      <th>Writes shards</th>
                      <th>Updated</th>
                      <th>Expires</th>
                    </tr>
                  </thead>
                  <tbody>
                    {found.nodes.map((node) => (
                      <tr key={node.nodeId} class={node.self ? "self" : undefined}>
                        <td>
                          <code>{node.nodeId}</code>
                          {node.self && <span class="badge">this node</span>}
                        </td>
                        <td>{node.role}</td>
                        <td>
                          {/* Each node serves its own dashboard (its logs and metrics are its own); the key is asked for there. */}
                          {node.url === null || node.self ? node.url : <a href={`${node.url}_dashboard#/deployment`} rel="noreferrer">{node.url}</a>}
                        </td>
                        <td>{node.writes === null ? "—" : node.writes.join(", ") || "none"}</td>
                        <td>{relative(node.updatedAt, now)}</td>
                        <td>{relative(node.expiresAt, now)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
          {found.shards !== undefined && <ShardsTable shards={found.shards} now={now} />}
          {found.store !== undefined && (
            <>
              <h2>Store</h2>
              <p data-testid="store-cost">
                About <strong>${found.store.costPerHour.requestsUsd.toFixed(4)}</strong> per hour in requests (S3 Standard prices, from this node's requests over the last hour).
              </p>
              <div class="scroll">
                <table class="grid compact" data-testid="store-requests">
                  <thead>
                    <tr>
                      <th>Operation</th>
                      <th class="number">Requests, last hour</th>
                      <th class="number">USD / 1,000</th>
                    </tr>
                  </thead>
                  <tbody>
                    {Object.entries(found.store.requestsLastHour).map(([operation, requests]) => (
                      <tr key={operation}>
                        <td>{operation}</td>
                        <td class="number">{count(requests)}</td>
                        <td class="number">{found.store!.costPerHour.prices[operation] ?? "—"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </>
      )}
      <h2>Last hour</h2>
      <ErrorLine error={metrics.error} testId="metrics-error" />
      {metrics.data !== null && <Charts answer={metrics.data} />}
      {found?.schema !== undefined && (
        <>
          <h2>Schema</h2>
          <div class="scroll">
            <table class="grid compact" data-testid="schema">
              <thead>
                <tr>
                  <th>Table</th>
                  <th class="number">Number</th>
                  <th>Shard key</th>
                  <th>Indexes</th>
                </tr>
              </thead>
              <tbody>
                {found.schema.tables.map((table) => (
                  <tr key={table.name}>
                    <td>{table.name}</td>
                    <td class="number">{table.number}</td>
                    <td>{table.shardKey ?? "—"}</td>
                    <td>
                      {table.indexes.map((index) => `${index.name} (${index.fields.join(", ")})${index.state === "backfilling" ? " backfilling" : ""}`).join(" · ")}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {found !== null && <p class="muted small">Read at {clockTime(now)}.</p>}
    </section>
  );
}

/** A follower's (or a standby's) distance from its writers, loud when it is large. */
function LagBanner({ deployment }: { readonly deployment: Deployment }) {
  const following = (deployment.shards ?? []).filter((shard) => shard.role === "following");
  if (following.length === 0) return null;
  const worst = Math.max(...following.map((shard) => shard.stalenessMs ?? 0));
  const heldBy = deployment.frontier?.heldBy;
  return (
    <p class={`banner${worst >= LAG_WARNING_MS ? " warn" : ""}`} data-testid="lag">
      This node follows {following.length} shard{following.length === 1 ? "" : "s"}: at most <strong>{duration(worst)}</strong> behind its writers
      {heldBy !== null && heldBy !== undefined ? `; the frontier is held by shard ${heldBy.shard} (writer ${heldBy.writer ?? "none"}${heldBy.writerLive ? "" : ", not live"})` : ""}. Edits go to the writers.
    </p>
  );
}

function Charts({ answer }: { readonly answer: MetricsAnswer }) {
  const times = answer.points.map((point) => point.time);
  if (answer.points.length === 0) return <p class="muted">No intervals measured yet (one every {duration(answer.intervalMs)}).</p>;
  return (
    <div class="charts">
      <MetricsChart title="Commits / s" unit="/s" testId="chart-commits" times={times} series={[{ label: "commits/s", color: "#2f6f5e", values: answer.points.map((point) => point.commitsPerSec) }]} />
      <MetricsChart
        title="Mutation latency"
        unit="ms"
        testId="chart-latency"
        times={times}
        series={[
          { label: "p50", color: "#2563eb", values: answer.points.map((point) => point.mutationP50Ms) },
          { label: "p99", color: "#c2410c", values: answer.points.map((point) => point.mutationP99Ms) },
        ]}
      />
      <MetricsChart title="Transitions / s" unit="/s" testId="chart-transitions" times={times} series={[{ label: "transitions/s", color: "#7c3aed", values: answer.points.map((point) => point.transitionsPerSec) }]} />
    </div>
  );
}

/** The time relative figures are shown against: the page's clock, read again with each answer. */
function useNow(version: unknown): number {
  const [now, setNow] = useState(() => pageClock.nowMs());
  useEffect(() => setNow(pageClock.nowMs()), [version]);
  return now;
}
