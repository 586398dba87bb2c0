import { isDeepStrictEqual } from "node:util";
import { CairnError } from "../../src/base/errors.js";
import { applyDiff, heldRowsOf, valueOf, type HeldRows } from "../../src/client/DiffedRows.js";
import type { Value } from "../../src/model/Value.js";
import { decodeValue } from "../../src/model/ValueJson.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import type { ServeChild } from "../kit/ServeChild.js";
import { BenchSocket, type BenchQuery } from "./BenchSocket.js";
import { BLOCK_COMMITS } from "./fanOut.js";
import { closeSockets, openSockets, sessionsDownTo } from "./rawSockets.js";
import { alternatingBlocks, cpuWindow, idleCpuMsPerSecond, mergeWindows, pairedDifference, type CpuDifference, type CpuWindow } from "./serverCpu.js";

/** The channel every client's page reads, and the one the control commits write (nobody reads it). */
export const CHANNEL = "general";
export const QUIET_CHANNEL = "quiet";
/** Messages preloaded per page row: the channel holds twice a page, so the page is full and an insert pushes its last row out. */
const PRELOAD_PAGES = 2;
/** Messages per preloading commit. */
const PRELOAD_BATCH = 250;
/**
 * Warm-ups of the whole mode at most: each is already `clients` whole results (seconds of
 * server CPU at 1,000 clients), and the code they run is the diffs mode's warm-ups' and
 * phase 2's.
 */
const WHOLE_WARMUPS_MAX = 2;
/**
 * The idle rate is the median of this many one-second slices: the server's periodic
 * background work (the shard's maintenance and GC passes, the local store's folds after
 * the preload) can fill 4–5 seconds in a row, which a median of 5 would take for idle.
 */
const IDLE_SECONDS = 10;
/** A message body of ~100 characters, as a chat line might be. */
const FILLER = "the quick brown fox jumps over the lazy dog, then naps in the afternoon sun by the river";

export interface DiffFanOutOptions {
  readonly clients: number;
  /** Measured commits of the diffs mode and of the whole mode (in blocks of BLOCK_COMMITS, each paired with a control block). */
  readonly diffCommits: number;
  readonly wholeCommits: number;
  readonly warmups: number;
  readonly pageRows: number;
  readonly onProgress: (line: string) => void;
}

/** One mode's figures: every client announcing diffs, or none. */
export interface DiffModeFigures {
  readonly diffs: boolean;
  readonly idleCpuMsPerSecond: number;
  /** Mutator's send → the last client's Transition carrying the commit. */
  readonly latency: LatencySummary;
  /** Measured commits (one insert into the page's channel each), net of idle. */
  readonly cpu: CpuWindow;
  /** As many inserts into a channel nobody reads, in alternating blocks, clients connected. */
  readonly control: CpuWindow;
  /** The fan-out's own CPU per commit: measured beyond the control. */
  readonly overControl: CpuDifference;
  /** Frame payload bytes all clients received per measured commit, and per client. */
  readonly bytesPerCommit: number;
  readonly bytesPerClientPerCommit: number;
  /** Frames all clients received per measured commit (one Transition each). */
  readonly framesPerCommit: number;
  /** Bytes a client received to subscribe (ConnectAck and the page's first result). */
  readonly subscribeBytesPerClient: number;
}

/** The arithmetic of one diff client, checked against the whole result a client without diffs got. */
export interface DiffCheckFigures {
  /** QueryDiffs the checked client applied (warm-ups and measured commits), and those that did not add up to their checksum. */
  readonly diffsApplied: number;
  readonly checksumFailures: number;
  /** Warm-up commits whose diff-applied result was compared with a whole-result client's for the same commit, and how many differed. */
  readonly comparedCommits: number;
  readonly mismatchedCommits: number;
  /** After the measured commits: the checked client's result equals a fresh subscriber's whole result. */
  readonly finalMatches: boolean;
  /** Diff clients whose held checksum differed from the checked client's at the end of a block (the most at any block). */
  readonly clientsOffChecksum: number;
}

export interface DiffFanOutFigures {
  readonly clients: number;
  readonly pageRows: number;
  readonly preloadedMessages: number;
  /** Messages inserted after the preload: warm-ups, measured commits and controls (#quiet). */
  readonly postedMessages: number;
  /** The mean JSON size of a page row, bytes. */
  readonly rowBytes: number;
  readonly diffs: DiffModeFigures;
  readonly whole: DiffModeFigures;
  readonly check: DiffCheckFigures;
  /** whole ÷ diffs: bytes per commit, server CPU per commit (net of idle), and the fan-out's CPU beyond the control, each ± 2 SE propagated. */
  readonly bytesRatio: number;
  readonly cpuRatio: Ratio;
  readonly cpuRatioOverControl: Ratio;
}

export interface Ratio {
  readonly ratio: number;
  readonly error: number;
}

/**
 * Phase 5: diffs against whole results. The channel gets PRELOAD_PAGES × `pageRows`
 * messages; then `clients` raw sockets all subscribe to `messages:page` of it (`pageRows`
 * rows, newest first) and sequential inserts into the channel are measured, each waited
 * for until every client has the Transition carrying it — first `diffCommits` with every
 * client announcing diffs, then `wholeCommits` with fresh sessions announcing none (whose
 * per-commit cost is large and steady: fewer commits pin it as well). Each mode's blocks
 * of BLOCK_COMMITS alternate with blocks of inserts into a channel nobody reads (the
 * control), as phase 2's do.
 *
 * In the diffs mode one client keeps the rows (src/client/DiffedRows.ts, as the client
 * library does) and applies every QueryDiff; during the warm-ups a client without diffs
 * is subscribed beside it, and the two results are compared commit by commit; after the
 * measured commits the rows are compared with a fresh subscriber's whole result. The
 * reference client is closed before the measured blocks: its whole results need a run
 * of their own per commit, which is not the diffs mode's cost.
 *
 * Each mode's clients remove their query before they close, so that their sessions leave
 * nothing in the server's resume registry: 1,000 closed sessions of a 500-row diffable
 * page would hold ~210 MiB of its heap there for a minute (docs/benchmarks.md), which
 * the next mode would pay for in garbage collection.
 */
export async function measureDiffFanOut(server: ServeChild, mutator: BenchSocket, syncUrl: string, options: DiffFanOutOptions): Promise<DiffFanOutFigures> {
  const preloadedMessages = PRELOAD_PAGES * options.pageRows;
  options.onProgress(`   preloading ${preloadedMessages} messages into #${CHANNEL}…`);
  await preloadChannel(mutator, CHANNEL, preloadedMessages);
  const baseline = (await server.adminStatus()).sync.sessions;
  const messages = new MessageSource();
  const checked = new CheckedDiffClient();
  options.onProgress(`   diffs: ${options.clients} clients announcing diffs…`);
  const diffs = await measureMode(server, mutator, syncUrl, { ...options, diffs: true, commits: options.diffCommits, messages, checked, baseline });
  options.onProgress(`   whole results: ${options.clients} fresh clients without diffs…`);
  const whole = await measureMode(server, mutator, syncUrl, {
    ...options,
    diffs: false,
    commits: options.wholeCommits,
    warmups: Math.min(options.warmups, WHOLE_WARMUPS_MAX),
    messages,
    checked: null,
    baseline,
  });
  return {
    clients: options.clients,
    pageRows: options.pageRows,
    preloadedMessages,
    postedMessages: messages.count,
    rowBytes: checked.meanRowBytes(),
    diffs,
    whole,
    check: checked.figures(),
    bytesRatio: round(whole.bytesPerCommit / diffs.bytesPerCommit, 1),
    cpuRatio: ratio(whole.cpu.netCpuMsPerCommit, whole.cpu.netCpuMsPerCommitError, diffs.cpu.netCpuMsPerCommit, diffs.cpu.netCpuMsPerCommitError),
    cpuRatioOverControl: ratio(whole.overControl.ms, whole.overControl.errorMs, diffs.overControl.ms, diffs.overControl.errorMs),
  };
}

interface ModeContext extends DiffFanOutOptions {
  readonly diffs: boolean;
  readonly commits: number;
  readonly messages: MessageSource;
  /** The diffs mode's checked client (null in the whole mode). */
  readonly checked: CheckedDiffClient | null;
  /** Sessions the server holds without this mode's clients. */
  readonly baseline: number;
}

async function measureMode(server: ServeChild, mutator: BenchSocket, syncUrl: string, context: ModeContext): Promise<DiffModeFigures> {
  const { clients, diffs, messages, checked } = context;
  const page = pageQuery(context.pageRows);
  const sockets = await openSockets(
    syncUrl,
    clients,
    () => ({ diffs }),
    async (socket, index) => {
      if (index === 0 && checked !== null) checked.attach(socket);
      await socket.subscribeAll([page]);
    },
    (opened) => opened % 250 === 0 && context.onProgress(`   ${opened} clients subscribed`),
  );
  let reference: WholeResultClient | null = null;
  try {
    const subscribeBytesPerClient = round(sum(sockets, (socket) => socket.bytesReceived) / clients, 0);
    const post = (channel: string) => postMessage(mutator, channel, messages.next());
    const everyClient = (ts: number) => Promise.all(sockets.map((socket) => socket.reached(ts)));

    // Warm-ups; in the diffs mode, beside a client without diffs, compared commit by commit.
    if (checked !== null) reference = await WholeResultClient.subscribe(syncUrl, page);
    for (let n = 0; n < context.warmups; n++) {
      const { ts } = await post(CHANNEL);
      await everyClient(ts);
      if (reference !== null) {
        await reference.socket.reached(ts);
        checked!.compare(ts, reference.valueAt(ts));
      }
    }
    await reference?.close();
    reference = null;
    checked?.stopRecording();

    const idle = await idleCpuMsPerSecond(server, IDLE_SECONDS);
    const latencies: number[] = [];
    const measuredBlocks: CpuWindow[] = [];
    const controlBlocks: CpuWindow[] = [];
    let bytes = 0;
    let frames = 0;
    const measure = async (block: number) => {
      const bytesBefore = sum(sockets, (socket) => socket.bytesReceived);
      const framesBefore = sum(sockets, (socket) => socket.framesReceived);
      measuredBlocks.push(
        await cpuWindow(server, block, idle, async () => {
          for (let n = 0; n < block; n++) {
            const { ts, sentMs } = await post(CHANNEL);
            latencies.push(Math.max(...(await everyClient(ts))) - sentMs);
          }
        }),
      );
      bytes += sum(sockets, (socket) => socket.bytesReceived) - bytesBefore;
      frames += sum(sockets, (socket) => socket.framesReceived) - framesBefore;
      checked?.checkAgreement(sockets);
      if (checked === null) checkSameHash(sockets);
    };
    const compare = async (block: number) => {
      controlBlocks.push(
        await cpuWindow(server, block, idle, async () => {
          for (let n = 0; n < block; n++) await post(QUIET_CHANNEL);
        }),
      );
    };
    await alternatingBlocks(context.commits, BLOCK_COMMITS, measure, compare);

    // The checked client's rows, after every measured diff, against a fresh subscriber's whole result at the same ts.
    if (checked !== null) {
      reference = await WholeResultClient.subscribe(syncUrl, page);
      checked.compareFinal(reference.valueAt(reference.socket.lastTransitionTs));
    }
    const cpu = mergeWindows(measuredBlocks, idle);
    return {
      diffs,
      idleCpuMsPerSecond: idle,
      latency: summarizeLatencies(latencies),
      cpu,
      control: mergeWindows(controlBlocks, idle),
      overControl: pairedDifference(measuredBlocks, controlBlocks, idle),
      bytesPerCommit: round(bytes / context.commits, 0),
      bytesPerClientPerCommit: round(bytes / context.commits / clients, 1),
      framesPerCommit: round(frames / context.commits, 2),
      subscribeBytesPerClient,
    };
  } finally {
    await reference?.close();
    // Unsubscribed first, the sessions leave nothing for a resume (see measureDiffFanOut).
    await Promise.allSettled(sockets.map((socket) => socket.unsubscribeAll()));
    await closeSockets(sockets);
    await sessionsDownTo(server, context.baseline);
  }
}

/** The page every client subscribes to: the channel's newest `pageRows` messages. */
function pageQuery(pageRows: number): BenchQuery {
  return { path: "messages:page", args: { channel: CHANNEL, paginationOpts: { cursor: null, numItems: pageRows } } };
}

/** One insert; resolves with its commit ts once the mutator's response and its own Transition are in. */
async function postMessage(mutator: BenchSocket, channel: string, fields: { author: string; body: string }): Promise<{ ts: number; sentMs: number }> {
  const sent = mutator.mutate("messages:send", { channel, ...fields });
  const response = await sent.response;
  await sent.settled;
  return { ts: response.message.ts, sentMs: sent.sentMs };
}

async function preloadChannel(mutator: BenchSocket, channel: string, count: number): Promise<void> {
  const messages = new MessageSource();
  for (let done = 0; done < count; done += PRELOAD_BATCH) {
    const batch = Array.from({ length: Math.min(PRELOAD_BATCH, count - done) }, () => messages.next());
    const sent = mutator.mutate("messages:sendMany", { channel, messages: batch });
    await sent.settled;
  }
}

/** Chat lines of ~100 characters from 50 authors. */
class MessageSource {
  private n = 0;

  get count(): number {
    return this.n;
  }

  next(): { author: string; body: string } {
    const n = this.n++;
    return { author: `author-${n % 50}`, body: `${n}: ${FILLER}` };
  }
}

/**
 * The diffs mode's checked client: keeps the page's rows as the client library does
 * (heldRowsOf, applyDiff) and counts diffs that do not add up; while recording, keeps its
 * result at each Transition's ts for the comparison with a whole-result client.
 */
class CheckedDiffClient {
  private socket: BenchSocket | null = null;
  private held: HeldRows | null = null;
  private value: Value | null = null;
  private recording = true;
  private readonly valuesByTs = new Map<number, Value>();
  private diffsApplied = 0;
  private checksumFailures = 0;
  private comparedCommits = 0;
  private mismatchedCommits = 0;
  private finalMatches = false;
  private clientsOffChecksum = 0;
  private rowBytes = Number.NaN;

  attach(socket: BenchSocket): void {
    this.socket = socket;
    socket.onFrame = (message) => this.observe(message);
  }

  stopRecording(): void {
    this.recording = false;
    this.valuesByTs.clear();
  }

  compare(ts: number, whole: Value | undefined): void {
    const applied = this.valuesByTs.get(ts);
    if (applied === undefined || whole === undefined) throw new CairnError("INTERNAL", `phase 5's check: no result at ts ${ts} (diffs ${applied !== undefined}, whole ${whole !== undefined})`);
    this.comparedCommits++;
    if (!isDeepStrictEqual(applied, whole)) this.mismatchedCommits++;
  }

  /** `whole`: a fresh subscriber's result, at or after the last commit to the channel (the controls' commits since do not touch it). */
  compareFinal(whole: Value | undefined): void {
    this.finalMatches = whole !== undefined && this.value !== null && isDeepStrictEqual(this.value, whole);
  }

  /** Every diff client should hold the checked client's checksum. */
  checkAgreement(sockets: readonly BenchSocket[]): void {
    const expected = this.socket!.hashes.get(0);
    const off = sockets.filter((socket) => socket.hashes.get(0) !== expected).length;
    this.clientsOffChecksum = Math.max(this.clientsOffChecksum, off);
  }

  meanRowBytes(): number {
    return this.rowBytes;
  }

  figures(): DiffCheckFigures {
    return {
      diffsApplied: this.diffsApplied,
      checksumFailures: this.checksumFailures,
      comparedCommits: this.comparedCommits,
      mismatchedCommits: this.mismatchedCommits,
      finalMatches: this.finalMatches,
      clientsOffChecksum: this.clientsOffChecksum,
    };
  }

  private observe(message: ServerMessage): void {
    if (message.type !== "Transition") return;
    for (const modification of message.modifications) {
      if (modification.queryId !== 0) continue;
      if (modification.type === "QueryUpdated") {
        this.held = modification.rows === undefined ? null : heldRowsOf(modification.rows, modification.value, modification.hash);
        if (this.held === null) {
          // A whole result to a client that announced diffs must come with its rows.
          this.checksumFailures++;
          this.value = null;
          continue;
        }
        this.value = valueOf(this.held);
        if (Number.isNaN(this.rowBytes) && this.held.texts.length > 0) this.rowBytes = round(sumOf(this.held.texts.map((text) => Buffer.byteLength(text))) / this.held.texts.length, 0);
      } else if (modification.type === "QueryDiff") {
        const applied = this.held === null ? null : applyDiff(this.held, modification);
        if (applied === null) {
          this.checksumFailures++;
          this.held = null;
          this.value = null;
          continue;
        }
        this.diffsApplied++;
        this.held = applied.rows;
        this.value = applied.value;
      }
    }
    if (this.recording && this.value !== null) this.valuesByTs.set(message.endVersion.ts, this.value);
  }
}

/** A client without diffs subscribed to the page: the whole result it got at each ts. */
class WholeResultClient {
  private readonly values = new Map<number, Value>();

  private constructor(readonly socket: BenchSocket) {
    socket.onFrame = (message) => {
      if (message.type !== "Transition") return;
      for (const modification of message.modifications) {
        if (modification.queryId === 0 && modification.type === "QueryUpdated") this.values.set(message.endVersion.ts, decodeValue(modification.value));
      }
    };
  }

  static async subscribe(syncUrl: string, page: BenchQuery): Promise<WholeResultClient> {
    const client = new WholeResultClient(await BenchSocket.connect(syncUrl));
    await client.socket.subscribeAll([page]);
    return client;
  }

  valueAt(ts: number): Value | undefined {
    return this.values.get(ts);
  }

  close(): Promise<void> {
    return this.socket.close();
  }
}

/** Without diffs, every client's result is the same whole result: the same hash. */
function checkSameHash(sockets: readonly BenchSocket[]): void {
  const expected = sockets[0]!.hashes.get(0);
  const off = sockets.filter((socket) => socket.hashes.get(0) !== expected).length;
  if (off > 0) throw new CairnError("INTERNAL", `phase 5: ${off} clients without diffs hold another result than client 0`);
}

function sum(sockets: readonly BenchSocket[], read: (socket: BenchSocket) => number): number {
  return sockets.reduce((total, socket) => total + read(socket), 0);
}

function sumOf(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** a ÷ b with the errors of each (± 2 SE) propagated to first order. */
function ratio(a: number, aError: number, b: number, bError: number): Ratio {
  const value = a / b;
  const error = Math.abs(value) * Math.hypot(aError / a, bError / b);
  return { ratio: round(value, 1), error: round(error, 1) };
}
