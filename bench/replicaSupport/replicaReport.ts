import { round } from "../kit/LatencySummary.js";
import { SAME_REGION_LATENCY } from "../kit/latencyModels.js";
import { columns, formatTable, latencies, ms, perOperation, printReport, verdict, type TableLine } from "../kit/report.js";
import type { CatchUpFigures } from "./catchUpAfterPause.js";
import type { IdleRequestFigures, NodeIdleRequests } from "./idleRequests.js";
import type { ReplicaBenchOptions } from "./options.js";
import type { ReplicaLatencyFigures } from "./replicaLatency.js";
import { STORE_OPERATIONS } from "./storeCalls.js";

/** One request round trip under the uniform model: 15 ms + [0, 10] ms, 20 ms on average. */
export const ROUND_TRIP_MS = SAME_REGION_LATENCY.latencyMs + SAME_REGION_LATENCY.jitterMs / 2;

/** The issue's targets, given the options (the polling bound follows the idle poll). */
export function targetsOf(options: ReplicaBenchOptions) {
  return {
    /** With hints: replica Transition p50 ≤ writer commit p50 + 1 round trip + 10 ms. */
    hintsOverCommitMs: ROUND_TRIP_MS + 10,
    /** Without: ≤ commit p50 + half the idle poll + 2 round trips. */
    pollingOverCommitMs: options.pollIntervalMs / 2 + 2 * ROUND_TRIP_MS,
    /** An idle replica's GETs per shard-hour at the 1 s idle poll. */
    getsPerShardHour: 4_000,
  } as const;
}

export interface ReplicaBenchSummary {
  readonly latencyModel: string;
  readonly store: { readonly hintsDeploymentDocuments: number; readonly hintsDeploymentSegments: number; readonly pollingDeploymentDocuments: number | null };
  readonly latency: { readonly hints: ReplicaLatencyFigures | null; readonly polling: ReplicaLatencyFigures | null };
  readonly idle: IdleRequestFigures | null;
  readonly catchUp: CatchUpFigures | null;
  /** Problems found while stopping the nodes (non-zero exits). */
  readonly stopProblems: readonly string[];
  readonly runSeconds: number;
}

export function printReplicaReport(summary: ReplicaBenchSummary, options: ReplicaBenchOptions): void {
  const lines: TableLine[] = [...header(summary, options), ...latencySection(summary.latency, options), ...idleSection(summary.idle, options), ...catchUpSection(summary.catchUp)];
  if (summary.stopProblems.length > 0) lines.push(`stopping: ${summary.stopProblems.join("; ")}`);
  printReport(formatTable(lines), { ...summary, targets: targetsOf(options), options });
}

function header(summary: ReplicaBenchSummary, options: ReplicaBenchOptions): TableLine[] {
  const { store } = summary;
  const polling = store.pollingDeploymentDocuments === null ? "" : `; deployment polling/ (--no-wake-hints on both nodes): ${store.pollingDeploymentDocuments} counter documents`;
  const inserted = summary.catchUp === null ? "the bench app's counters" : `the bench app's counters and phase 3's ${count(summary.catchUp.documents)} inserts`;
  const loads = [
    ...(options.phases.includes(1)
      ? [
          `phase 1 sequential (one bump in flight, raw protocol clients), each bump after a pause uniform in [${seconds(options.spacingMinMs)}, ${seconds(options.spacingMaxMs)}] s from when the replica's client saw the previous one` +
            ` (past the tailer's 25 → 800 ms backoff ramp, so it polls at its ${count(options.pollIntervalMs)} ms idle interval, at a random phase of it)`,
        ]
      : []),
    ...(options.phases.includes(2) ? ["phase 2 none (nothing committed)"] : []),
    ...(options.phases.includes(3) ? [`phase 3 ${options.loadWriters} closed-loop writers on the writer, one ~${options.documentBytes}-byte document per mutation`] : []),
  ];
  return [
    `bench:replica — a writer and a replica (\`cairn serve\`, \`cairn serve --replica\`, each a child process) over the S3 test endpoint (child process), ${summary.latencyModel}`,
    `store: deployment hints/ (wake hints on): ${count(store.hintsDeploymentDocuments)} documents (${inserted}), a log of ${count(store.hintsDeploymentSegments)} segments, one shard${polling}; every node's local store in a temp dir`,
    `load: ${loads.join("; ")}; first ${options.serverWarmupCommits} warm-up commits per writer, latency off`,
  ];
}

function latencySection(latency: ReplicaBenchSummary["latency"], options: ReplicaBenchOptions): TableLine[] {
  const { hints, polling } = latency;
  if (hints === null && polling === null) return [];
  const targets = targetsOf(options);
  const samples = hints?.samples ?? polling?.samples ?? 0;
  const lines: TableLine[] = [`1. commit → Transition on a replica: client B on the writer bumps a counter that client A, on the replica, subscribes to; ${samples} samples per mode`];
  if (hints !== null) {
    lines.push(
      ["hints on: commit (B: send → MutationResponse) p50 / p99", latencies(hints.commit), ""],
      ["hints on: replica Transition (B's send → A's) p50 / p99", latencies(hints.transition), ""],
      ["  Transition p50 − commit p50", ms(hints.p50DifferenceMs), verdict(hints.p50DifferenceMs <= targets.hintsOverCommitMs, `≤ ${targets.hintsOverCommitMs} ms (1 round trip + 10 ms)`)],
      ["  hints the writer sent / failed / dropped", hints.hints === null ? "none" : `${hints.hints.sent} / ${hints.hints.failed} / ${hints.hints.dropped}`, ""],
    );
  }
  if (polling !== null) {
    lines.push(
      ["hints off (both nodes): commit p50 / p99", latencies(polling.commit), ""],
      ["hints off: replica Transition p50 / p99", latencies(polling.transition), ""],
      [
        "  Transition p50 − commit p50",
        ms(polling.p50DifferenceMs),
        verdict(polling.p50DifferenceMs <= targets.pollingOverCommitMs, `≤ ${targets.pollingOverCommitMs} ms (half the ${count(options.pollIntervalMs)} ms idle poll + 2 round trips)`),
      ],
    );
  }
  const spacing = [hints, polling].filter((figures) => figures !== null).map((figures) => `${count(figures.meanSpacingMs)} ms (${figures.wakeHints ? "hints on" : "hints off"})`);
  lines.push({ block: [`mean pause before a bump, as drawn: ${spacing.join(", ")}`] });
  return lines;
}

function idleSection(idle: IdleRequestFigures | null, options: ReplicaBenchOptions): TableLine[] {
  if (idle === null) return [];
  const targets = targetsOf(options);
  const { replica, writer } = idle;
  const perHour = replica.requestsPerHour;
  return [
    `2. S3 requests of an idle replica (nothing committed): its /metrics store calls over ${idle.measuredSeconds} s, scaled to an hour; idle poll ${count(idle.pollIntervalMs)} ms, one shard; S3 Standard prices (GET $0.0004, PUT/LIST $0.005 per 1,000)`,
    ["GETs per shard-hour (all of the replica's)", count(perHour.GET), verdict(perHour.GET <= targets.getsPerShardHour, `≤ ${count(targets.getsPerShardHour)}`)],
    ["  expected of the tailing: a slot GET per poll, a manifest GET per 15 s", count(replica.expectedTailGetsPerHour), ""],
    ["PUTs per hour: node registry renewals (the node's)", count(replica.registryPutsPerHour), ""],
    ["PUTs per hour: consumer watermark (only after an apply)", count(replica.watermarkPutsPerHour), ""],
    ...(replica.otherPutsPerHour === 0 ? [] : [["PUTs per hour: other objects", count(replica.otherPutsPerHour), ""] as const]),
    ["LISTs / DELETEs per hour", `${count(perHour.LIST)} / ${count(perHour.DELETE)}`, ""],
    ["cost per replica-month (30 days)", `$${replica.dollarsPer30Days.toFixed(3)} ($${replica.dollarsPerHour.toFixed(5)}/h)`, ""],
    ["replica staleness at the end of the window", replica.stalenessMsAtEnd === null ? "unknown" : ms(replica.stalenessMsAtEnd), ""],
    ["the idle writer beside it: PUT / GET / LIST per hour", `${count(writer.requestsPerHour.PUT)} / ${count(writer.requestsPerHour.GET)} / ${count(writer.requestsPerHour.LIST)} ($${writer.dollarsPer30Days.toFixed(3)} per 30 days)`, ""],
    callColumns(replica, writer, idle.measuredSeconds),
    { block: [`cross-check, the endpoint's own counters over the window (both nodes): ${perOperation(idle.endpoint.requests)}; the nodes' /metrics: GET ${replica.calls.get + writer.calls.get}, PUT ${putsOf(replica) + putsOf(writer)}, LIST ${replica.calls.list + writer.calls.list}`] },
  ];
}

function putsOf(node: NodeIdleRequests): number {
  return node.calls.create + node.calls.casPut;
}

function callColumns(replica: NodeIdleRequests, writer: NodeIdleRequests, windowSeconds: number): TableLine {
  const rows = STORE_OPERATIONS.map((operation) => [operation, String(replica.calls[operation]), count(replica.callsPerHour[operation]), String(writer.calls[operation]), count(writer.callsPerHour[operation])]);
  return columns(["store call", `replica in ${Math.round(windowSeconds)} s`, "per hour", `writer in ${Math.round(windowSeconds)} s`, "per hour"], rows);
}

function catchUpSection(catchUp: CatchUpFigures | null): TableLine[] {
  if (catchUp === null) return [];
  const { load, bucketAtResume } = catchUp;
  const gcKept = bucketAtResume.logStart <= catchUp.pausedAtSeqno + 1;
  const snapshotLead = catchUp.snapshotLeadSegments === null ? "no snapshot" : `${count(catchUp.snapshotLeadSegments)} segments`;
  const restores = catchUp.restored ? `YES (${catchUp.replicaRestoreLines.length} restore line(s); ${catchUp.replicaGetsPerSegment} GETs per segment)` : "none: every segment replayed";
  const lines: TableLine[] = [
    `3. catch-up after a pause: the replica SIGSTOPped for ${catchUp.pauseSeconds} s while ${load.writers} closed-loop writers inserted ~${load.documentBytes}-byte documents on the writer; then SIGCONT, /api/health read every 50 ms`,
    ["load in the pause: documents (per s), commit p50 / p99", `${count(load.mutations)} (${load.mutationsPerSecond}/s), ${latencies(load.commit)}`, ""],
    ["segments to catch up (documents per segment)", `${count(catchUp.segments)} (${catchUp.documentsPerSegment})`, ""],
    ["SIGCONT → first /api/health answer; first progress (round 1 applied)", `${ms(catchUp.firstAnswerMs)}; ${ms(catchUp.firstProgressMs)}`, ""],
    ["SIGCONT → caught up (its appliedSeqno = the writer's)", `${(catchUp.catchUpMs / 1000).toFixed(2)} s`, ""],
    ["catch-up rate, segments/s", count(catchUp.segmentsPerSecond), ""],
    ["catch-up rate, documents/s", count(catchUp.documentsPerSecond), ""],
    ["replica requests meanwhile: GET (per segment) / PUT / LIST", `${count(catchUp.replicaRequests.GET)} (${catchUp.replicaGetsPerSegment}) / ${count(catchUp.replicaRequests.PUT)} / ${count(catchUp.replicaRequests.LIST)}`, ""],
    ["its watermark before the pause (its position)", `${catchUp.watermarkSeqno}, ${(catchUp.watermarkAgeMs / 1000).toFixed(1)} s old (${catchUp.pausedAtSeqno})`, ""],
    ["logStart at resume", String(bucketAtResume.logStart), verdict(gcKept, `≤ ${catchUp.pausedAtSeqno + 1}: GC kept what the replica needs`)],
    ["writer snapshots in the pause; newest one's lead on the replica", `${catchUp.writerSnapshots}; ${snapshotLead} (restoreLagSegments ${count(catchUp.restoreLagSegments)})`, ""],
    ["snapshot restores by the replica", restores, ""],
  ];
  lines.push({ block: [`appliedSeqno after SIGCONT: ${catchUp.progress.map((step) => `${step.appliedSeqno} at ${(step.atMs / 1000).toFixed(2)} s`).join(", ")}`] });
  if (catchUp.replicaLastError !== null) lines.push(["replica's last error after catching up", catchUp.replicaLastError, ""]);
  if (catchUp.writerGcLines.length > 0) lines.push({ block: ["the writer's GC passes during the pause:", ...catchUp.writerGcLines.map((line) => `  ${line}`)] });
  return lines;
}

function count(value: number): string {
  return round(value, 1).toLocaleString("en-US");
}

function seconds(valueMs: number): string {
  return (valueMs / 1000).toFixed(1);
}
