import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StoreCall } from "../objectstore/index.js";
import type { EngineEvent } from "../shard/index.js";
import type { SyncStats } from "../sync/index.js";

/**
 * The node's Prometheus metrics (`GET /metrics`), in a registry of its own so that two
 * servers in one process (tests) do not share counters. Engine and store events are
 * pushed in as they happen; sync figures are read from the handler when scraped.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly commits = new Counter({ name: "cairn_commits_total", help: "Mutations committed (write units in durable segments)", labelNames: ["shard"], registers: [this.registry] });
  private readonly segments = new Counter({ name: "cairn_segments_written_total", help: "Segments this node created", labelNames: ["shard", "kind"], registers: [this.registry] });
  private readonly segmentBytes = new Counter({ name: "cairn_segment_bytes_written_total", help: "Bytes of segments this node created", labelNames: ["shard"], registers: [this.registry] });
  private readonly flushUnits = new Histogram({
    name: "cairn_flush_units",
    help: "Write units per data segment (group-commit batch size)",
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    registers: [this.registry],
  });
  private readonly flushSeconds = new Histogram({
    name: "cairn_flush_duration_seconds",
    help: "Segment create to verified durable",
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  private readonly mutationSeconds = new Histogram({
    name: "cairn_mutation_duration_seconds",
    help: "A mutation call from start to its durable commit (commit latency as a client sees it, minus the network)",
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  private readonly storeRequests = new Counter({ name: "cairn_store_requests_total", help: "Object-store calls by operation and outcome", labelNames: ["operation", "outcome"], registers: [this.registry] });
  private readonly storeSeconds = new Histogram({
    name: "cairn_store_request_duration_seconds",
    help: "Object-store call duration by operation",
    labelNames: ["operation"],
    buckets: [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5],
    registers: [this.registry],
  });
  private droppedSeen = 0;

  constructor(syncStats: () => SyncStats) {
    collectDefaultMetrics({ register: this.registry, prefix: "cairn_process_" });
    const gauge = (name: string, help: string, read: (stats: SyncStats) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(syncStats()));
        },
      });
    gauge("cairn_sync_sessions", "Open sync sessions", (stats) => stats.sessions);
    gauge("cairn_sync_subscriptions", "Subscribed queries over all sessions", (stats) => stats.subscriptions);
    gauge("cairn_sync_queued_frames", "Frames waiting beyond their session's socket", (stats) => stats.queuedFrames);
    const metrics = this;
    new Counter({
      name: "cairn_sync_dropped_frames_total",
      help: "Transitions and broadcasts dropped for slow clients (each such client is resynced)",
      registers: [this.registry],
      collect() {
        const dropped = syncStats().droppedFrames;
        if (dropped > metrics.droppedSeen) this.inc(dropped - metrics.droppedSeen);
        metrics.droppedSeen = dropped;
      },
    });
  }

  engineEvent(event: EngineEvent): void {
    if (event.type !== "flushed") return;
    const shard = String(event.shard);
    this.segments.inc({ shard, kind: event.kind });
    this.segmentBytes.inc({ shard }, event.bytes);
    this.flushSeconds.observe(event.flushMs / 1000);
    if (event.kind === "data") {
      this.commits.inc({ shard }, event.units);
      this.flushUnits.observe(event.units);
    }
  }

  storeCall(call: StoreCall): void {
    this.storeRequests.inc({ operation: call.operation, outcome: call.outcome });
    this.storeSeconds.observe({ operation: call.operation }, call.durationMs / 1000);
  }

  mutationFinished(durationMs: number): void {
    this.mutationSeconds.observe(durationMs / 1000);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
