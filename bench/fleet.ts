/**
 * Fleet benchmark: `cairn serve --fleet` nodes (real child processes, the CLI as an
 * operator runs it) over the S3 test endpoint (another child) with bench:commit's
 * S3-Standard latency model, opened as an s3:// store URL; six shards; every node's local
 * store in a temp dir, removed at the end. Fleet tuning and lease are the defaults
 * (beat 2 s, presence TTL 6 s, lease TTL 10 s renewed every 3 s, clock-skew bound 1 s).
 *
 * For each fleet size in `--nodes` (default 1, 2, 3), on a fresh deployment of its own
 * (empty at the start; it holds the documents the run inserts): start the nodes, wait until
 * they converge to the rendezvous assignment, then `--clients` (default 400) closed-loop
 * clients, spread round-robin over the nodes, each post one ~`--body-bytes` message to a
 * random one of `--channels` channels (sharded by channel) and send the next as soon as
 * it is acknowledged (`--rate R`: the clients together start at most R mutations a
 * second, the same load for every fleet size). The clients run in a load-generator child process (so their CPU
 * is measured apart from the bench's and the nodes'), sending frames as the client
 * library does (clientId, seq, ackedThrough). After `--warmup-s`, a `--duration-s`
 * window measures: mutations/s; the nodes' CPU (utime + stime from /proc, every thread)
 * per 1,000 mutations; the latency of mutations whose shard the client's node writes
 * (owned) and of those it forwards; the whole machine's CPU (/proc/stat) and each
 * process's; and, with 2 nodes or more, cross-node commit → Transition: probes posted
 * through node Y, one shard after another, timed until a subscriber on node X ≠ Y sees
 * them. At `--kill-at` nodes (default: the largest size), the node that writes the most
 * shards is then SIGKILLed with the load still on, and the time from the kill to the
 * first acknowledged write on each of its shards is measured.
 *
 * `--routing owner` has each client post only to channels of the shards its node writes
 * (a client that routes by shard): nothing is forwarded, so the fleet's cost of following
 * the other nodes' shards shows apart from the cost of forwarding.
 *
 *   npm run bench:fleet [-- --nodes 1,2,3 --duration-s 30 --warmup-s 10 --clients 400
 *       --channels 1000 --body-bytes 100 --rate 0 --routing spread --kill-at 3
 *       --kill-wait-s 60 --seed 1 --node-ids a,b,c --cpu-profile-dir DIR]
 *
 * Prints a table, then one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../src/base/errors.js";
import { assignment } from "../src/fleet/index.js";
import { round, summarizeLatencies } from "./kit/LatencySummary.js";
import { LATENCY_MODELS } from "./kit/latencyModels.js";
import { RemoteEndpoint } from "./kit/RemoteEndpoint.js";
import { progressPrinter } from "./kit/progress.js";
import { TsxChild } from "./kit/TsxChild.js";
import { Cleanup, stopOnSignal } from "./kit/Cleanup.js";
import { awaitConverged, balancedNodeIds, type FleetNode, isConverged, shardsPerNode, startFleetNode } from "./fleetSupport/fleetNodes.js";
import { FLEET_BENCH_SHARDS, parseFleetBenchOptions } from "./fleetSupport/fleetOptions.js";
import { printFleetReport, type FleetRun, type KillRun, type CpuFigures } from "./fleetSupport/fleetReport.js";
import type { KillFigures, LoadConfig, LoadReply, LoadWindow } from "./fleetSupport/loadProtocol.js";
import { machineCpu, processCpuMs } from "./fleetSupport/procCpu.js";

const options = parseFleetBenchOptions(process.argv.slice(2));
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true";
const APP_PATH = fileURLToPath(new URL("./fleetSupport/fleetBenchApp.ts", import.meta.url));
const LATENCY_MODEL = LATENCY_MODELS["s3-standard"];
/** How long a fleet may take to converge to the rendezvous assignment (a few beats and hand-overs). */
const CONVERGE_WAIT_MS_MAX = 180_000;
/** How long the converged fleet's idle CPU (beats, heartbeats, tailers' polls) is measured before the load starts. */
const IDLE_MEASURE_MS = 5_000;
/** The defaults `cairn serve --fleet` runs with (src/shard/engineOptions.ts, src/fleet/fleetTuning.ts, the CLI). */
const TUNING = { leaseTtlMs: 10_000, heartbeatIntervalMs: 3_000, beatMs: 2_000, presenceTtlMs: 6_000, maxClockSkewMs: 1_000 } as const;

const progress = progressPrinter("[bench:fleet] ");

async function main(): Promise<void> {
  const startedMs = performance.now();
  const cleanup = new Cleanup(progress);
  signals = stopOnSignal(cleanup, progress);
  try {
    const directory = await mkdtemp(join(tmpdir(), "cairn-bench-fleet-"));
    cleanup.add("removing the temp dir", () => rm(directory, { recursive: true, force: true }));
    progress("starting the S3 test endpoint in a child process…");
    const endpoint = await RemoteEndpoint.start(LATENCY_MODEL);
    cleanup.add("closing the endpoint", () => endpoint.close());
    await endpoint.latencyOn();
    const largest = options.nodes[options.nodes.length - 1]!;
    const ids = options.nodeIds ?? balancedNodeIds(largest, FLEET_BENCH_SHARDS);
    const runs: FleetRun[] = [];
    let kill: KillRun | null = null;
    for (const size of options.nodes) {
      const mark = cleanup.mark();
      const result = await measureFleet(cleanup, endpoint, directory, ids.slice(0, size));
      runs.push(result.run);
      kill ??= result.kill;
      progress(`stopping the ${size}-node fleet…`);
      await cleanup.runSince(mark);
    }
    await cleanup.run();
    printFleetReport({
      latencyModel: LATENCY_MODEL.description,
      shards: FLEET_BENCH_SHARDS,
      tuning: TUNING,
      options,
      runs,
      kill,
      runSeconds: round((performance.now() - startedMs) / 1000, 1),
    });
  } finally {
    await cleanup.run();
  }
  progress(`done in ${round((performance.now() - startedMs) / 1000, 1)} s`);
}

async function measureFleet(cleanup: Cleanup, endpoint: RemoteEndpoint, directory: string, ids: readonly string[]): Promise<{ run: FleetRun; kill: KillRun | null }> {
  const size = ids.length;
  const prefix = `fleet-${size}/`;
  const expected = assignment(FLEET_BENCH_SHARDS, ids);
  progress(`${size} node(s) ${ids.join(", ")}: expected writers ${JSON.stringify(expected)}`);
  const start = (nodeId: string) =>
    startFleetNode({
      nodeId,
      endpoint: endpoint.address,
      prefix,
      localDirectory: join(directory, `${size}-${nodeId}`),
      appPath: APP_PATH,
      numShards: FLEET_BENCH_SHARDS,
      ...(options.cpuProfileDir !== null ? { nodeFlags: ["--cpu-prof", "--cpu-prof-dir", join(options.cpuProfileDir, `${size}-nodes`)] } : {}),
    });
  const nodes: FleetNode[] = [];
  const track = (node: FleetNode) => {
    nodes.push(node);
    cleanup.add(`stopping ${node.name}`, async () => {
      const code = await node.stop();
      if (code !== 0 && code !== null) progress(`${node.name} exited with ${code}:\n${node.output.last(40)}`);
    });
    progress(`   ${node.name} at ${node.url} (pid ${node.pid})`);
  };
  // The first node creates the deployment; the rest join it.
  track(await start(ids[0]!));
  for (const node of await Promise.all(ids.slice(1).map(start))) track(node);
  const convergedMs = await awaitConverged(nodes, expected, CONVERGE_WAIT_MS_MAX);
  progress(`   converged to the rendezvous assignment ${(convergedMs / 1000).toFixed(1)} s after the last node started`);
  const idleBefore = sampleNodesCpu(nodes);
  await sleep(IDLE_MEASURE_MS);
  const idleAfter = sampleNodesCpu(nodes);
  const idleNodesCores = round((idleAfter.cpuMs - idleBefore.cpuMs) / (idleAfter.atMs - idleBefore.atMs), 4);
  progress(`   idle: the nodes use ${idleNodesCores} cores between them`);

  const config: LoadConfig = {
    nodes: nodes.map((node) => ({ nodeId: node.name, url: node.url })),
    owners: expected.map((owner) => owner!),
    numShards: FLEET_BENCH_SHARDS,
    clients: options.clients,
    channels: options.channels,
    bodyBytes: options.bodyBytes,
    rate: options.rate,
    routing: options.routing,
    probes: size > 1,
    seed: options.seed,
  };
  const loader = TsxChild.start("load generator", ["bench/fleetSupport/loadProcess.ts", JSON.stringify(config)], { stdout: "messages" });
  cleanup.add("stopping the load generator", async () => {
    loader.send({ command: "stop" });
    await loader.finished().catch(() => loader.kill());
  });
  const ask = async (command: unknown): Promise<LoadReply> => {
    loader.send(command);
    const reply = (await loader.nextMessage()) as LoadReply;
    if (reply.type === "error") throw new CairnError("INTERNAL", `the load generator failed: ${reply.error}`);
    return reply;
  };
  const ready = (await loader.nextMessage()) as LoadReply;
  if (ready.type !== "ready") throw new CairnError("INTERNAL", `the load generator said ${JSON.stringify(ready)} first`);
  progress(`   ${ready.clients} clients connected; warming up for ${options.warmupS} s…`);
  await sleep(options.warmupS * 1000);

  progress(`   measuring for ${options.durationS} s…`);
  const logBefore = await logPosition(nodes, expected);
  await endpoint.resetCounters();
  await ask({ command: "window-start" });
  const before = sampleCpu(nodes, endpoint, loader);
  const healthReadsDone = await timeHealthReads(nodes, options.durationS * 1000);
  const after = sampleCpu(nodes, endpoint, loader);
  const windowReply = await ask({ command: "window-end" });
  const healthReads = await healthReadsDone;
  const requests = await endpoint.counters();
  const logAfter = await logPosition(nodes, expected);
  if (windowReply.type !== "window") throw new CairnError("INTERNAL", `expected window figures, got ${windowReply.type}`);
  const window: LoadWindow = windowReply.window;
  const stable = await isConverged(nodes, expected).catch(() => false);
  const cpu = cpuBetween(before, after, nodes);
  const mutationsPerS = window.mutations / (window.wallMs / 1000);
  progress(
    `   ${round(mutationsPerS, 0)} mutations/s; nodes ${round(cpu.nodesCpuMs / window.mutations, 3)} CPU-s per 1,000; machine ${round(cpu.machineBusyFraction * 100, 1)}% busy; ` +
      `owned p50 ${window.owned.p50Ms} ms, forwarded p50 ${window.forwarded.p50Ms} ms; failures ${JSON.stringify(window.failures)}`,
  );
  const run: FleetRun = {
    nodes: size,
    nodeIds: [...ids],
    shardsPerNode: shardsPerNode(ids, FLEET_BENCH_SHARDS),
    convergedS: round(convergedMs / 1000, 1),
    ownershipStableThroughWindow: stable,
    window,
    mutationsPerS: round(mutationsPerS, 1),
    cpu,
    cpuSecondsPer1000Mutations: round(cpu.nodesCpuMs / window.mutations, 4),
    idleNodesCores,
    healthReadMs: summarizeLatencies(healthReads),
    segments: logAfter.segments - logBefore.segments,
    mutationsPerSegment: round(window.mutations / (logAfter.segments - logBefore.segments), 2),
    hintsSent: logAfter.hintsSent - logBefore.hintsSent,
    s3RequestsPer1000Mutations: Object.fromEntries(
      Object.entries(requests)
        .filter(([, counters]) => counters.requests > 0)
        .map(([operation, counters]) => [operation, round((counters.requests * 1000) / window.mutations, 1)]),
    ),
    s3ErrorsPer1000Mutations: round((Object.values(requests).reduce((sum, counters) => sum + counters.errors, 0) * 1000) / window.mutations, 1),
    netCpuSecondsPer1000Mutations: round((cpu.nodesCpuMs - idleNodesCores * cpu.wallMs) / window.mutations, 4),
  };

  const kill = size === options.killAt ? await measureKill(nodes, ask) : null;
  return { run, kill };
}

/** SIGKILLs the node that writes the most shards (load still on) and times each of its shards' first acknowledged write after it. */
async function measureKill(nodes: readonly FleetNode[], ask: (command: unknown) => Promise<LoadReply>): Promise<KillRun> {
  const ids = nodes.map((node) => node.name);
  const owners = assignment(FLEET_BENCH_SHARDS, ids);
  const counts = shardsPerNode(ids, FLEET_BENCH_SHARDS);
  const victim = [...nodes].reverse().reduce((most, node) => (counts[node.name]! > counts[most.name]! ? node : most));
  const shards = owners.flatMap((owner, shard) => (owner === victim.name ? [shard] : []));
  const survivors = nodes.filter((node) => node !== victim);
  const survivorTargets = assignment(FLEET_BENCH_SHARDS, survivors.map((node) => node.name));
  progress(`kill: SIGKILL to ${victim.name} (writes shards ${shards.join(", ")}) with the load on; survivors should end at ${JSON.stringify(survivorTargets)}…`);
  await ask({ command: "arm-kill" });
  await sleep(1_000);
  // The victim writes its shards, so its own view of their leases is exact.
  const victimView = await victim.health();
  const killedWallMs = performance.timeOrigin + performance.now();
  const killedMs = performance.now();
  await victim.kill();
  const converged = awaitConverged(survivors, survivorTargets, options.killWaitS * 1000, killedMs).then(
    (ms) => round(ms / 1000, 2),
    () => null,
  );
  const left = survivorsDropped(survivors, victim.name, options.killWaitS * 1000, killedMs);
  const reply = await ask({ command: "killed", nodeId: victim.name, atWallMs: killedWallMs, shards, waitMsMax: options.killWaitS * 1000 });
  if (reply.type !== "kill") throw new CairnError("INTERNAL", `expected kill figures, got ${reply.type}`);
  const figures: KillFigures = reply.kill;
  const survivorsConvergedS = await converged;
  const victimLeftLiveSetS = await left;
  const perShard = shards.map((shard) => {
    const expiresAt = victimView.shards[shard]?.leaseExpiresAt ?? null;
    const acquiredAt = survivors.map((node) => node.output.firstAt(new RegExp(`shard ${shard}: this node writes it now`), killedWallMs)).find((at) => at !== null) ?? null;
    return {
      shard,
      leaseLapsedAfterKillS: expiresAt === null ? null : round((Date.parse(expiresAt) - killedWallMs) / 1000, 2),
      acquiredAfterKillS: acquiredAt === null ? null : round((acquiredAt - killedWallMs) / 1000, 2),
      firstAckAfterKillS: figures.firstAckMs[String(shard)] === null || figures.firstAckMs[String(shard)] === undefined ? null : round(figures.firstAckMs[String(shard)]! / 1000, 2),
    };
  });
  progress(`   per shard: ${JSON.stringify(perShard)}; the victim left the survivors' live set after ${victimLeftLiveSetS} s; survivors converged after ${survivorsConvergedS} s`);
  return { nodes: nodes.length, victim: victim.name, shards, figures, perShard, victimLeftLiveSetS, survivorsConvergedS };
}

/** Seconds from the kill until no survivor counts `victim` live any more (null: not within the wait). */
async function survivorsDropped(survivors: readonly FleetNode[], victim: string, waitMsMax: number, killedMs: number): Promise<number | null> {
  while (performance.now() - killedMs < waitMsMax) {
    const views = await Promise.all(survivors.map((node) => node.health().catch(() => null)));
    if (views.every((view) => view !== null && !(view.fleet?.liveNodes ?? []).includes(victim))) return round((performance.now() - killedMs) / 1000, 2);
    await sleep(100);
  }
  return null;
}

/**
 * Reads every node's /api/health once a second for `durationMs` and returns how long each
 * read took: how late a node under load answers an HTTP request (its event loop's backlog).
 * Resolves when the window is over, with a promise of the samples (reads still out finish after it).
 */
async function timeHealthReads(nodes: readonly FleetNode[], durationMs: number): Promise<Promise<number[]>> {
  const startedMs = performance.now();
  const reads: Promise<void>[] = [];
  const samples: number[] = [];
  while (performance.now() - startedMs < durationMs) {
    for (const node of nodes) {
      const sentMs = performance.now();
      reads.push(node.health().then(() => void samples.push(performance.now() - sentMs), () => void samples.push(Number.POSITIVE_INFINITY)));
    }
    await sleep(Math.min(1000, Math.max(0, durationMs - (performance.now() - startedMs))));
  }
  // Reads still out when the window ends are awaited after it (the caller samples CPU first).
  return Promise.all(reads).then(() => samples);
}

/** Segments committed so far over every shard (each read from its writer) and wake hints sent by every node. */
async function logPosition(nodes: readonly FleetNode[], owners: readonly (string | null)[]): Promise<{ readonly segments: number; readonly hintsSent: number }> {
  const views = await Promise.all(nodes.map((node) => node.health()));
  const statuses = await Promise.all(nodes.map((node) => node.adminStatus()));
  let segments = 0;
  owners.forEach((owner, shard) => {
    const view = views[nodes.findIndex((node) => node.name === owner)]!;
    segments += view.shards[shard]!.appliedSeqno + 1;
  });
  return { segments, hintsSent: statuses.reduce((sum, status) => sum + (status.hints?.sent ?? 0), 0) };
}

function sampleNodesCpu(nodes: readonly FleetNode[]): { readonly atMs: number; readonly cpuMs: number } {
  return { atMs: performance.now(), cpuMs: nodes.reduce((sum, node) => sum + (processCpuMs(node.pid) ?? Number.NaN), 0) };
}

interface CpuSample {
  readonly atMs: number;
  readonly nodes: readonly (number | null)[];
  readonly endpoint: number | null;
  readonly loader: number | null;
  readonly bench: number;
  readonly machine: ReturnType<typeof machineCpu>;
}

function sampleCpu(nodes: readonly FleetNode[], endpoint: RemoteEndpoint, loader: TsxChild): CpuSample {
  const usage = process.cpuUsage();
  return {
    atMs: performance.now(),
    nodes: nodes.map((node) => processCpuMs(node.pid)),
    endpoint: endpoint.pid === undefined ? null : processCpuMs(endpoint.pid),
    loader: loader.pid === undefined ? null : processCpuMs(loader.pid),
    bench: (usage.user + usage.system) / 1000,
    machine: machineCpu(),
  };
}

function cpuBetween(before: CpuSample, after: CpuSample, nodes: readonly FleetNode[]): CpuFigures {
  const wallMs = after.atMs - before.atMs;
  const grew = (a: number | null | undefined, b: number | null | undefined) => (a === null || a === undefined || b === null || b === undefined ? Number.NaN : b - a);
  const perNode = Object.fromEntries(nodes.map((node, index) => [node.name, round(grew(before.nodes[index], after.nodes[index]) / wallMs, 3)]));
  const nodesCpuMs = nodes.reduce((sum, _, index) => sum + grew(before.nodes[index], after.nodes[index]), 0);
  const machineBusyMs = after.machine.busyMs - before.machine.busyMs;
  const machineTotalMs = after.machine.totalMs - before.machine.totalMs;
  const ours = nodesCpuMs + grew(before.endpoint, after.endpoint) + grew(before.loader, after.loader) + grew(before.bench, after.bench);
  return {
    otherProcessesCores: round((machineBusyMs - ours) / wallMs, 3),
    wallMs: round(wallMs, 0),
    nodesCpuMs: round(nodesCpuMs, 0),
    nodeCores: perNode,
    nodesCores: round(nodesCpuMs / wallMs, 3),
    endpointCores: round(grew(before.endpoint, after.endpoint) / wallMs, 3),
    loaderCores: round(grew(before.loader, after.loader) / wallMs, 3),
    benchCores: round(grew(before.bench, after.bench) / wallMs, 3),
    machineBusyCores: round(machineBusyMs / wallMs, 3),
    machineBusyFraction: round(machineBusyMs / machineTotalMs, 4),
  };
}

/** Set once main() started: whether a signal interrupted the run (what fails then is the interruption, not an error). */
let signals = null as { readonly interrupted: () => boolean } | null;

try {
  await main();
} catch (error) {
  if (!signals?.interrupted()) throw error;
}
