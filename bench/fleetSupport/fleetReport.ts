import { round, type LatencySummary } from "../kit/LatencySummary.js";
import { columns, formatTable, latencies, printReport, verdict, type TableLine } from "../kit/report.js";
import type { FleetBenchOptions } from "./fleetOptions.js";
import type { KillFigures, LoadWindow } from "./loadProtocol.js";

/** Process CPU over a window, in cores (CPU ms per wall ms), from /proc. */
export interface CpuFigures {
  readonly wallMs: number;
  readonly nodesCpuMs: number;
  readonly nodeCores: Readonly<Record<string, number>>;
  readonly nodesCores: number;
  readonly endpointCores: number;
  readonly loaderCores: number;
  readonly benchCores: number;
  /** The whole machine (/proc/stat): busy cores, and busy time over all cores' time. */
  readonly machineBusyCores: number;
  readonly machineBusyFraction: number;
  /** The machine's busy cores less this benchmark's processes: what else ran on the machine meanwhile. */
  readonly otherProcessesCores: number;
}

export interface FleetRun {
  readonly nodes: number;
  readonly nodeIds: readonly string[];
  readonly shardsPerNode: Readonly<Record<string, number>>;
  readonly convergedS: number;
  /** Whether the nodes still agreed on the same writers after the window (no hand-over during it). */
  readonly ownershipStableThroughWindow: boolean;
  readonly window: LoadWindow;
  readonly mutationsPerS: number;
  readonly cpu: CpuFigures;
  /** The nodes' CPU (summed) in seconds per 1,000 acknowledged mutations. */
  readonly cpuSecondsPer1000Mutations: number;
  /** The nodes' CPU (summed) while converged and idle, just before the load, in cores. */
  readonly idleNodesCores: number;
  /** How long GET /api/health took, read from every node once a second during the window. */
  readonly healthReadMs: LatencySummary;
  /** cpuSecondsPer1000Mutations less the idle rate over the window. */
  readonly netCpuSecondsPer1000Mutations: number;
  /** Segments committed during the window over every shard, and the mutations each carried on average (group commit). */
  readonly segments: number;
  readonly mutationsPerSegment: number;
  /** Wake hints the nodes sent each other during the window. */
  readonly hintsSent: number;
  /** The endpoint's requests during the window, per 1,000 mutations, by operation. */
  readonly s3RequestsPer1000Mutations: Readonly<Record<string, number>>;
  /** Of those, the ones answered with an error (mostly a follower's GET of a log slot not written yet: 404). */
  readonly s3ErrorsPer1000Mutations: number;
}

export interface KillRun {
  readonly nodes: number;
  readonly victim: string;
  readonly shards: readonly number[];
  readonly figures: KillFigures;
  /** Per shard of the victim, seconds after the kill: its lease's expiry (as the victim last renewed it), a survivor's log line saying it writes it, the first acknowledged write sent after the kill. */
  readonly perShard: readonly { readonly shard: number; readonly leaseLapsedAfterKillS: number | null; readonly acquiredAfterKillS: number | null; readonly firstAckAfterKillS: number | null }[];
  /** Seconds from the kill until no survivor counted the victim live. */
  readonly victimLeftLiveSetS: number | null;
  /** Seconds from the kill until the survivors agreed on the new assignment (null: not within the wait). */
  readonly survivorsConvergedS: number | null;
}

export interface FleetReport {
  readonly latencyModel: string;
  readonly shards: number;
  readonly tuning: { readonly leaseTtlMs: number; readonly heartbeatIntervalMs: number; readonly beatMs: number; readonly presenceTtlMs: number; readonly maxClockSkewMs: number };
  readonly options: FleetBenchOptions;
  readonly runs: readonly FleetRun[];
  readonly kill: KillRun | null;
  readonly runSeconds: number;
}

/** Target: a fleet's CPU per mutation at most this many times one node's. */
export const CPU_RATIO_MAX = 1.15;
/** Target: 2 nodes' throughput at least this many times one node's (or the cores are the bound). */
const SCALING_MIN = 1.5;
/** Target: a killed node's shards take writes again within the lease TTL plus this. */
const TAKEOVER_MARGIN_MS = 2_000;

const summary = (latency: LatencySummary) => (latency.samples === 0 ? "—" : latencies(latency));

export function printFleetReport(report: FleetReport): void {
  const { options, runs, kill, tuning } = report;
  const one = runs.find((run) => run.nodes === 1) ?? null;
  const two = runs.find((run) => run.nodes === 2) ?? null;
  const cpuRatios = Object.fromEntries(runs.filter((run) => run.nodes > 1 && one !== null).map((run) => [String(run.nodes), round(run.cpuSecondsPer1000Mutations / one!.cpuSecondsPer1000Mutations, 3)]));
  const scaling2 = one !== null && two !== null ? round(two.mutationsPerS / one.mutationsPerS, 3) : null;
  const takeoverTargetMs = tuning.leaseTtlMs + TAKEOVER_MARGIN_MS;
  const takeoverValues = kill === null ? [] : Object.values(kill.figures.firstAckMs);
  const takeoverWorstMs = takeoverValues.length === 0 || takeoverValues.some((value) => value === null) ? null : Math.max(...(takeoverValues as number[]));

  const lines: TableLine[] = [
    `bench:fleet — ${report.shards} shards, \`cairn serve --fleet\` children over the S3 test endpoint (child process), ${report.latencyModel}`,
    [
      "load",
      `${options.clients} closed-loop clients (load-generator child)${options.rate > 0 ? `, paced to ${options.rate} mutations/s in total` : ""}, round-robin over the nodes; messages:send of ~${options.bodyBytes} B to a random one of ${options.channels} channels${options.routing === "owner" ? " of a shard the client's node writes (nothing forwarded)" : ""}`,
      "",
    ],
    ["store", "a fresh deployment per fleet size, empty at the start; it holds the messages the run inserts (below)", ""],
    [
      "tuning (defaults)",
      `lease TTL ${tuning.leaseTtlMs / 1000} s (heartbeat ${tuning.heartbeatIntervalMs / 1000} s), beat ${tuning.beatMs / 1000} s, presence TTL ${tuning.presenceTtlMs / 1000} s, clock-skew bound ${tuning.maxClockSkewMs / 1000} s`,
      "",
    ],
    ["window", `${options.warmupS} s warm-up, then ${options.durationS} s measured`, ""],
    "Per fleet size",
    columns(
      ["nodes", "shards/node", "mutations/s", "CPU-s/1k", "× 1 node", "net of idle", "idle cores", "node cores", "machine busy", "endpoint/loader/other cores", "owned p50/p99", "forwarded p50/p99", "cross-node p50/p99", "mutations/segment", "hints/1k", "documents"],
      runs.map((run) => [
        String(run.nodes),
        Object.values(run.shardsPerNode).join("/"),
        run.mutationsPerS.toFixed(0),
        run.cpuSecondsPer1000Mutations.toFixed(3),
        one === null ? "—" : (run.cpuSecondsPer1000Mutations / one.cpuSecondsPer1000Mutations).toFixed(2),
        run.netCpuSecondsPer1000Mutations.toFixed(3),
        run.idleNodesCores.toFixed(3),
        Object.values(run.cpu.nodeCores).map((cores) => cores.toFixed(2)).join("+"),
        `${(run.cpu.machineBusyFraction * 100).toFixed(0)}% (${run.cpu.machineBusyCores.toFixed(2)} cores)`,
        `${run.cpu.endpointCores.toFixed(2)}/${run.cpu.loaderCores.toFixed(2)}/${run.cpu.otherProcessesCores.toFixed(2)}`,
        summary(run.window.owned),
        summary(run.window.forwarded),
        run.window.crossNode === null ? "—" : summary(run.window.crossNode.all),
        run.mutationsPerSegment.toFixed(1),
        ((run.hintsSent * 1000) / run.window.mutations).toFixed(0),
        String(run.window.mutationsSinceStart),
      ]),
    ),
    "Targets",
  ];
  for (const run of runs) {
    if (run.nodes === 1 || one === null) continue;
    const ratio = cpuRatios[String(run.nodes)]!;
    lines.push([`CPU per 1,000 mutations, ${run.nodes} nodes ÷ 1 node`, `${ratio.toFixed(2)}×`, verdict(ratio <= CPU_RATIO_MAX, `≤ ${CPU_RATIO_MAX}×`)]);
  }
  if (scaling2 !== null) {
    const saturated = two!.cpu.machineBusyFraction >= 0.95;
    // The cores bound the fleet only if this benchmark's own processes are what keeps them busy.
    const oursCores = two!.cpu.machineBusyCores - two!.cpu.otherProcessesCores;
    const bySelf = saturated && two!.cpu.otherProcessesCores < oursCores;
    lines.push([
      "mutations/s, 2 nodes ÷ 1 node",
      `${scaling2.toFixed(2)}× (machine ${(two!.cpu.machineBusyFraction * 100).toFixed(0)}% busy at 2 nodes, ${oursCores.toFixed(2)} cores of it this benchmark's, ${two!.cpu.otherProcessesCores.toFixed(2)} other processes')`,
      scaling2 >= SCALING_MIN
        ? verdict(true, `≥ ${SCALING_MIN}×`)
        : `≥ ${SCALING_MIN}×: ${bySelf ? "missed, the two cores are the bound" : saturated ? "MISSED; the cores were saturated, mostly by other processes" : "MISSED, and the cores are not saturated"}`,
    ]);
  }
  for (const run of runs) {
    if (run.window.crossNode === null) continue;
    const cross = run.window.crossNode;
    lines.push([
      `cross-node commit → Transition, ${run.nodes} nodes`,
      `${summary(cross.all)} (owner = sender ${summary(cross.ownerIsSender)}; = subscriber ${summary(cross.ownerIsSubscriber)}; third ${summary(cross.ownerIsThird)}; probe commit ${summary(cross.commit)}; ${cross.all.samples} probes)`,
      "",
    ]);
  }
  for (const run of runs) {
    lines.push([`${run.nodes} node(s): GET /api/health during the window, p50 / p99 / max`, `${latencies(run.healthReadMs)} / ${run.healthReadMs.maxMs.toFixed(1)} ms`, ""]);
    lines.push([`${run.nodes} node(s): S3 requests per 1,000 mutations`, `${Object.entries(run.s3RequestsPer1000Mutations).map(([operation, count]) => `${operation} ${count}`).join(", ")} (${run.s3ErrorsPer1000Mutations} answered with an error, mostly 404s of a follower's poll)`, ""]);
    if (!run.ownershipStableThroughWindow) lines.push([`${run.nodes} nodes: ownership moved during the window`, "yes", "figures include a hand-over"]);
    const failures = Object.entries(run.window.failures);
    if (failures.length > 0) lines.push([`${run.nodes} nodes: failed answers (re-sent)`, failures.map(([code, count]) => `${code} ${count}`).join(", "), ""]);
  }
  if (kill !== null) {
    const perShard = Object.entries(kill.figures.firstAckMs).map(([shard, ms]) => `shard ${shard} ${ms === null ? "none" : `${(ms / 1000).toFixed(2)} s`}`);
    lines.push([
      `SIGKILL of ${kill.victim} (${kill.nodes} nodes) → first acknowledged write on each of its shards`,
      perShard.join(", "),
      verdict(takeoverWorstMs !== null && takeoverWorstMs <= takeoverTargetMs, `≤ lease TTL + 2 s = ${takeoverTargetMs / 1000} s`),
    ]);
    const seconds = (value: number | null) => (value === null ? "—" : `${value.toFixed(2)} s`);
    for (const shard of kill.perShard) {
      lines.push([`   shard ${shard.shard}: lease lapsed / a survivor writes it / first ack (after the kill)`, `${seconds(shard.leaseLapsedAfterKillS)} / ${seconds(shard.acquiredAfterKillS)} / ${seconds(shard.firstAckAfterKillS)}`, ""]);
    }
    lines.push(["the victim leaves the survivors' live set after", seconds(kill.victimLeftLiveSetS), `presence TTL ${tuning.presenceTtlMs / 1000} s`]);
    lines.push(["survivors agree on the new assignment after", kill.survivorsConvergedS === null ? "not within the wait" : `${kill.survivorsConvergedS.toFixed(2)} s`, ""]);
  }
  printReport(formatTable(lines), {
    bench: "fleet",
    latencyModel: report.latencyModel,
    shards: report.shards,
    tuning,
    load: { clients: options.clients, rate: options.rate, routing: options.routing, channels: options.channels, bodyBytes: options.bodyBytes, durationS: options.durationS, warmupS: options.warmupS, seed: options.seed, generator: "child process" },
    runs,
    cpuRatios,
    cpuRatioTarget: CPU_RATIO_MAX,
    scaling2To1: scaling2,
    scalingTarget: SCALING_MIN,
    kill,
    takeoverWorstMs,
    takeoverTargetMs,
    runSeconds: report.runSeconds,
  });
}
