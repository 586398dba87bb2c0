import { CairnError } from "../../src/base/errors.js";
import { applyDiff, heldRowsOf, type HeldRows } from "../../src/client/DiffedRows.js";
import type { Value } from "../../src/model/Value.js";
import { decodeValue } from "../../src/model/ValueJson.js";
import type { QueryModification } from "../../src/sync/protocol.js";
import { round } from "../kit/LatencySummary.js";
import type { ServeChild } from "../kit/ServeChild.js";
import type { BenchQuery, BenchSocket } from "./BenchSocket.js";
import { closeSockets, openSockets, sessionsDownTo } from "./rawSockets.js";
import { cpuMsOf, idleCpuMsPerSecond, sample } from "./serverCpu.js";

/** Subscriptions per client, and the share of them the commits made while the clients are away touch (the storm). */
export const STORM_SUBSCRIPTIONS_PER_CLIENT = 10;
export const STORM_TOUCHED_FRACTION = 0.01;
/** One-second slices whose median is the idle rate (as phase 5's: a burst of background work can fill 5). */
const IDLE_SECONDS = 10;
/** Counters created per seeding commit. */
const SEED_BATCH = 1_000;

export interface StormOptions {
  readonly clients: number;
  /** Commits made while the clients are away; together they touch STORM_TOUCHED_FRACTION of the subscriptions. */
  readonly commits: number;
  readonly onProgress: (line: string) => void;
}

/** One storm: every client reconnects at once (FLEET_CONNECT_BATCH at a time) and re-adds its queries with the hashes it holds. */
export interface StormRunFigures {
  /** Whether the clients' Connect carried `resume` (their last session's id and Transition ts). */
  readonly resume: boolean;
  readonly commits: number;
  /** Subscriptions the commits touched. */
  readonly touched: number;
  /** Query runs the re-adds caused (shared-run hits + misses), of them misses, and re-adds answered from the resume registry without a run. */
  readonly queriesRun: number;
  readonly queryRunMisses: number;
  readonly resumedQueries: number;
  /** queriesRun ÷ subscriptions. */
  readonly rerunFraction: number;
  /** The answers the clients got: QueryUnchanged, QueryUpdated (QueryDiff and QueryFailed would be wrong here). */
  readonly unchanged: number;
  readonly updated: number;
  readonly otherAnswers: number;
  /** Touched subscriptions answered QueryUnchanged, or updated to anything but the counter's new value: wrong answers. */
  readonly staleAnswers: number;
  /** Untouched subscriptions answered QueryUpdated (a spare run, not wrong). */
  readonly spareUpdates: number;
  /** Server CPU over the storm (first Connect → last answer), net of idle; and per client. */
  readonly cpuMs: number;
  readonly cpuMsPerClient: number;
  readonly wallMs: number;
  /** Frame payload bytes a client received (ConnectAck and its answer). */
  readonly bytesPerClient: number;
}

export interface StormFigures {
  readonly clients: number;
  readonly subscriptionsPerClient: number;
  readonly subscriptions: number;
  readonly touchedFraction: number;
  readonly idleCpuMsPerSecond: number;
  readonly resume: StormRunFigures;
  readonly fresh: StormRunFigures;
  /**
   * After the resumed storm, a commit to one of client 0's resumed (untouched) diffable
   * subscriptions: "diff" when it arrived as a QueryDiff that applies to the rows the
   * client held from its first session, "whole" as a QueryUpdated, "failed" otherwise.
   */
  readonly resumedLive: "diff" | "whole" | "failed";
}

/** What a client keeps of its session across a reconnect. */
interface Held {
  readonly sessionId: string;
  readonly sinceTs: number;
  readonly hashes: ReadonlyMap<number, string>;
}

/**
 * Phase 6: the reconnect storm. `clients` raw sockets announcing diffs each subscribe to
 * STORM_SUBSCRIPTIONS_PER_CLIENT counters of their own (`s-<client>-<j>`, created at 0;
 * even j through `counters:get`, a number, odd j through `counters:row`, a diffable
 * one-row array). Then, twice: every socket closes, `commits` commits bump 1% of the
 * subscribed counters (spread over clients and both queries), and every client
 * reconnects, re-adding its queries with the hashes it holds — first with `resume` (its
 * last session's id and the ts of the last Transition it got), then without. Counted:
 * the queries the server ran for the re-adds, the re-adds it answered from the resume
 * registry, and each answer against what the commits touched.
 */
export async function measureReconnectStorm(server: ServeChild, mutator: BenchSocket, syncUrl: string, options: StormOptions): Promise<StormFigures> {
  const { clients } = options;
  const subscriptions = clients * STORM_SUBSCRIPTIONS_PER_CLIENT;
  options.onProgress(`   seeding ${subscriptions} counters…`);
  const names = Array.from({ length: subscriptions }, (_, k) => counterName(k));
  for (let done = 0; done < names.length; done += SEED_BATCH) await mutator.mutate("counters:seed", { names: names.slice(done, done + SEED_BATCH) }).settled;
  const baseline = (await server.adminStatus()).sync.sessions;
  const idle = await idleCpuMsPerSecond(server, IDLE_SECONDS);

  options.onProgress(`   connecting ${clients} clients with ${STORM_SUBSCRIPTIONS_PER_CLIENT} subscriptions each…`);
  // Client 0's rows of its first diffable query, as its first session got them: the resumed-liveness probe applies a diff to them.
  let probeRows: HeldRows | null = null;
  let sockets = await openSockets(
    syncUrl,
    clients,
    () => ({ diffs: true }),
    async (socket, index) => {
      const { transition } = await socket.subscribeAll(queriesOf(index));
      if (index === 0) probeRows = rowsOf(transition.message.modifications, PROBE_QUERY_ID);
    },
    (opened) => opened % 250 === 0 && options.onProgress(`   ${opened} clients subscribed`),
  );
  try {
    const touchedResume = touchedSet(subscriptions, 0);
    options.onProgress(`   storm with resume: ${touchedResume.size} subscriptions touched by ${options.commits} commits while the clients are away…`);
    let run = await storm(server, mutator, syncUrl, sockets, { ...options, idle, baseline, touched: touchedResume, resume: true });
    sockets = run.sockets;
    const resume = run.figures;
    const resumedLive = await probeResumedLive(mutator, sockets[0]!, probeRows);

    const touchedFresh = touchedSet(subscriptions, 1);
    options.onProgress(`   storm without resume: ${touchedFresh.size} subscriptions touched likewise…`);
    run = await storm(server, mutator, syncUrl, sockets, { ...options, idle, baseline, touched: touchedFresh, resume: false });
    sockets = run.sockets;
    return {
      clients,
      subscriptionsPerClient: STORM_SUBSCRIPTIONS_PER_CLIENT,
      subscriptions,
      touchedFraction: STORM_TOUCHED_FRACTION,
      idleCpuMsPerSecond: idle,
      resume,
      fresh: run.figures,
      resumedLive,
    };
  } finally {
    await closeSockets(sockets);
    await sessionsDownTo(server, baseline);
  }
}

/** Client 0's query the probe uses: its first `counters:row` (odd j). */
const PROBE_QUERY_ID = 1;

function counterName(k: number): string {
  return `s-${Math.floor(k / STORM_SUBSCRIPTIONS_PER_CLIENT)}-${k % STORM_SUBSCRIPTIONS_PER_CLIENT}`;
}

/** Client `index`'s subscriptions, queryId j = position j: even j a number, odd j a diffable row. */
function queriesOf(index: number, hashes?: ReadonlyMap<number, string>): BenchQuery[] {
  return Array.from({ length: STORM_SUBSCRIPTIONS_PER_CLIENT }, (_, j) => {
    const name = counterName(index * STORM_SUBSCRIPTIONS_PER_CLIENT + j);
    const hash = hashes?.get(j);
    return { path: j % 2 === 0 ? "counters:get" : "counters:row", args: { name }, ...(hash !== undefined ? { resultHash: hash } : {}) };
  });
}

/**
 * STORM_TOUCHED_FRACTION of the subscriptions (at least one), spread evenly: the m-th at
 * m × stride, moved on by m mod 10 so that both queries and every j get some, and by half
 * a stride for the second storm (`round` 1) so that the two storms touch different ones.
 * Never subscription 1 (client 0's probe).
 */
function touchedSet(subscriptions: number, round: 0 | 1): Set<number> {
  const count = Math.max(1, Math.round(subscriptions * STORM_TOUCHED_FRACTION));
  const stride = Math.floor(subscriptions / count);
  const offset = round === 0 ? 0 : Math.floor(stride / 2);
  const touched = new Set<number>();
  for (let m = 0; m < count; m++) {
    const k = Math.min(subscriptions - 1, m * stride + offset + (m % Math.min(10, Math.max(1, stride - offset))));
    if (k !== PROBE_QUERY_ID) touched.add(k);
  }
  return touched;
}

interface StormContext extends StormOptions {
  readonly idle: number;
  readonly baseline: number;
  readonly touched: ReadonlySet<number>;
  readonly resume: boolean;
}

async function storm(
  server: ServeChild,
  mutator: BenchSocket,
  syncUrl: string,
  sockets: readonly BenchSocket[],
  context: StormContext,
): Promise<{ sockets: BenchSocket[]; figures: StormRunFigures }> {
  const held: Held[] = sockets.map((socket) => ({ sessionId: socket.sessionId, sinceTs: socket.lastTransitionTs, hashes: new Map(socket.hashes) }));
  await closeSockets(sockets);
  await sessionsDownTo(server, context.baseline);

  // The commits made while the clients are away, each bumping its share of the touched counters.
  const touched = [...context.touched].sort((a, b) => a - b);
  const perCommit = Math.ceil(touched.length / context.commits);
  let commits = 0;
  for (let from = 0; from < touched.length; from += perCommit, commits++) {
    await mutator.mutate("counters:bumpMany", { names: touched.slice(from, from + perCommit).map(counterName) }).settled;
  }

  const answers: QueryModification[][] = [];
  const before = await sample(server);
  const reconnected = await openSockets(
    syncUrl,
    held.length,
    (index) => ({ diffs: true, ...(context.resume ? { resume: { sessionId: held[index]!.sessionId, sinceTs: held[index]!.sinceTs } } : {}) }),
    async (socket, index) => {
      const { transition } = await socket.subscribeAll(queriesOf(index, held[index]!.hashes));
      answers[index] = transition.message.modifications;
    },
  );
  const after = await sample(server);

  let unchanged = 0;
  let updated = 0;
  let otherAnswers = 0;
  let staleAnswers = 0;
  let spareUpdates = 0;
  answers.forEach((modifications, index) => {
    for (const modification of modifications) {
      const k = index * STORM_SUBSCRIPTIONS_PER_CLIENT + modification.queryId;
      const wasTouched = context.touched.has(k);
      if (modification.type === "QueryUnchanged") {
        unchanged++;
        if (wasTouched) staleAnswers++;
      } else if (modification.type === "QueryUpdated") {
        updated++;
        if (!wasTouched) spareUpdates++;
        else if (counterOf(modification.value) !== 1) staleAnswers++;
      } else {
        otherAnswers++;
      }
    }
  });
  const subscriptions = held.length * STORM_SUBSCRIPTIONS_PER_CLIENT;
  if (unchanged + updated + otherAnswers !== subscriptions) throw new CairnError("INTERNAL", `phase 6: ${unchanged + updated + otherAnswers} answers to ${subscriptions} re-added queries`);
  const growth = (read: (stats: typeof before.status.sync) => number) => read(after.status.sync) - read(before.status.sync);
  const queriesRun = growth((stats) => stats.sharedRunHits + stats.sharedRunMisses);
  const wallMs = after.atMs - before.atMs;
  const cpuMs = cpuMsOf(after.status) - cpuMsOf(before.status) - (context.idle * wallMs) / 1000;
  return {
    sockets: reconnected,
    figures: {
      resume: context.resume,
      commits,
      touched: touched.length,
      queriesRun,
      queryRunMisses: growth((stats) => stats.sharedRunMisses),
      resumedQueries: growth((stats) => stats.resumedQueries),
      rerunFraction: round(queriesRun / subscriptions, 4),
      unchanged,
      updated,
      otherAnswers,
      staleAnswers,
      spareUpdates,
      cpuMs: round(cpuMs, 1),
      cpuMsPerClient: round(cpuMs / held.length, 3),
      wallMs: round(wallMs, 1),
      bytesPerClient: round(reconnected.reduce((total, socket) => total + socket.bytesReceived, 0) / held.length, 0),
    },
  };
}

/** A counter query's value on the wire: the number (`counters:get`) or the one row's `value` (`counters:row`); null for anything else. */
function counterOf(wire: unknown): number | null {
  return counterOfValue(decodeValue(wire));
}

function counterOfValue(value: Value): number | null {
  if (typeof value === "number") return value;
  if (Array.isArray(value) && value.length === 1) {
    const row = value[0] as { value?: unknown };
    return typeof row.value === "number" ? row.value : null;
  }
  return null;
}

/** The rows a QueryUpdated of `queryId` in `modifications` came with (null: none, or they do not add up). */
function rowsOf(modifications: readonly QueryModification[], queryId: number): HeldRows | null {
  const updated = modifications.find((modification) => modification.queryId === queryId);
  if (updated?.type !== "QueryUpdated" || updated.rows === undefined) return null;
  return heldRowsOf(updated.rows, updated.value, updated.hash);
}

/**
 * A resumed subscription stays live: bump client 0's probe counter (untouched, so its
 * re-add was answered QueryUnchanged) and see how the change arrives on its new session.
 */
async function probeResumedLive(mutator: BenchSocket, socket: BenchSocket, rows: HeldRows | null): Promise<StormFigures["resumedLive"]> {
  const arrived = socket.expect((message) => message.type === "Transition" && message.modifications.some((modification) => modification.queryId === PROBE_QUERY_ID));
  await mutator.mutate("counters:bumpMany", { names: [counterName(PROBE_QUERY_ID)] }).settled;
  const frame = await arrived;
  if (frame.message.type !== "Transition") return "failed";
  const modification = frame.message.modifications.find((candidate) => candidate.queryId === PROBE_QUERY_ID)!;
  if (modification.type === "QueryUpdated") return counterOf(modification.value) === 1 ? "whole" : "failed";
  if (modification.type !== "QueryDiff" || rows === null) return "failed";
  const applied = applyDiff(rows, modification);
  return applied !== null && counterOfValue(applied.value) === 1 ? "diff" : "failed";
}
