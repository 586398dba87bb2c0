import { getHeapStatistics } from "node:v8";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StoreCall } from "../objectstore/index.js";
import type { EngineEvent } from "../shard/index.js";
import type { SyncStats } from "../sync/index.js";
import { frontierHeldBack } from "./frontierHeldBack.js";

/** What `watchNode` reads of the node when scraped. */
export interface NodeMetricsView {
  readonly shards: readonly { readonly shard: number; readonly role: string; readonly epoch: number; readonly frontierTs: number; readonly lastDataTs: number }[];
  /** The fleet's live nodes (null: not a fleet node). */
  readonly liveNodes: number | null;
}

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
    new Gauge({
      name: "cairn_heap_limit_bytes",
      help: "The node's JavaScript heap limit (cairn serve --heap-mib, plus V8's young generation)",
      registers: [this.registry],
      collect() {
        this.set(getHeapStatistics().heap_size_limit);
      },
    });
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

  /**
   * The node's shards and fleet, read when scraped: each shard's role (1 for the role it
   * has), epoch and frontier, the common frontier and how far the newest shard is ahead of
   * it, and the fleet's live nodes.
   */
  watchNode(view: () => NodeMetricsView): void {
    const registers = [this.registry];
    new Gauge({
      name: "cairn_shard_role",
      help: "Each shard's role on this node (1 for the role it has: following, acquiring, writing, handingOver, fenced, closed)",
      labelNames: ["shard", "role"],
      registers,
      collect() {
        this.reset();
        for (const shard of view().shards) this.set({ shard: String(shard.shard), role: shard.role }, 1);
      },
    });
    new Gauge({
      name: "cairn_shard_epoch",
      help: "Each shard's epoch as this node last read its manifest",
      labelNames: ["shard"],
      registers,
      collect() {
        for (const shard of view().shards) this.set({ shard: String(shard.shard) }, shard.epoch);
      },
    });
    new Gauge({
      name: "cairn_shard_frontier_ts",
      help: "Each shard's closed frontier here (through which ts this node knows its log complete, µs since the epoch)",
      labelNames: ["shard"],
      registers,
      collect() {
        for (const shard of view().shards) this.set({ shard: String(shard.shard) }, shard.frontierTs);
      },
    });
    new Gauge({
      name: "cairn_frontier_held_back_seconds",
      help: "How long the newest commit this node knows of waits for the common frontier reads use (what the slowest shard holds back)",
      registers,
      collect() {
        this.set((frontierHeldBack(view().shards)?.heldBackUs ?? 0) / 1e6);
      },
    });
    new Gauge({
      name: "cairn_fleet_live_nodes",
      help: "Live nodes of the fleet as this node's last beat saw them (0 when it is not a fleet node)",
      registers,
      collect() {
        this.set(view().liveNodes ?? 0);
      },
    });
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
