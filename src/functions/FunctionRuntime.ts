import {
  systemClock,
  type Clock,
  CairnError,
  ERROR_CODES,
  hasErrorCode,
  ACTION_RUN_MS_MAX,
  FUNCTION_RUN_MS_MAX,
  FUNCTION_WATCHDOG_INTERVAL_MS,
  MUTATION_ATTEMPTS_MAX,
  MUTATION_BACKOFF_MAX_MS,
  randomHex,
  SeededRandom,
  systemRandom,
  type Random,
} from "../base/index.js";
import type { LocalStore } from "../local/index.js";
import { type ClientReceipt, type DocumentId, type KeyRange, shardOfRoute, validateValue, type Value, decodeValueText, encodeValueText } from "../model/index.js";
import type { CommitResult, PendingReadToken, PendingView, ReceiptWrite, WriteUnit } from "../shard/index.js";
import { ownsReceipt, receiptOwnerOf } from "./receiptOwner.js";
import type { App } from "./App.js";
import type { Catalog } from "./catalog.js";
import { DatabaseReader, DatabaseWriter } from "./Database.js";
import { PendingWrites } from "./PendingWrites.js";
import { LaneHold, RunLanes } from "./RunLanes.js";
import { documentReadKey, ReadRecorder } from "./ReadRecorder.js";
import { ResultGuard } from "./ResultGuard.js";
import type { DiffableResult } from "./DiffableRead.js";
import type { AnyFunction, Auth, UserIdentity } from "./registration.js";
import { SnapshotReads } from "./SnapshotReads.js";
import { validateWith } from "./validate.js";
import { writeRangesOf } from "./writeRanges.js";
import { ZERO_ROUTE } from "./scheduledFunctions.js";
import { actionScheduler, MutationScheduler } from "./Scheduler.js";
import { actionStorage, checkStorageId, mutationStorage, queryStorage, type FileService, type StorageWriter } from "./FileStorage.js";
import { storedFileOf, type StoredFile } from "./storedFiles.js";
import { readShardJobs, uploadReferenced, type ShardJobs } from "./shardJobs.js";
import { routeOfValue } from "./routing.js";
import { currentFunctionCall, prefixConsoleInFunctions, reportWhenSettled, runAsFunctionCall, type CallStart } from "./functionCalls.js";
import type { FunctionLogEntry } from "./FunctionLogEntry.js";

/**
 * Runs an app's functions against the deployment's shards (DESIGN.md §7, §10).
 *
 * - A query reads every shard at one `readTs` (the shards' common frontier) and returns
 *   its value with exactly the key ranges it read, for subscriptions.
 * - A mutation runs on one shard: the lane of its `shardBy` value (shard 0 without one).
 *   It reads that shard at the shard's own readTs and may touch nothing elsewhere
 *   (CROSS_SHARD_MUTATION, nothing written); its commit and its receipt go to that
 *   shard's log. The receipt records the route of the shardBy value (null without
 *   shardBy), so that a reshard can move it to the mutation's lane under a new shard count.
 * - A mutation is a serializable transaction by optimistic concurrency: it runs against
 *   the snapshot at the shard's readTs, then commits its writes with its read set; the
 *   engine refuses the commit (WRITE_CONFLICT) if any write committed or queued after
 *   readTs touches what it read. The runtime then re-runs it, at most
 *   MUTATION_ATTEMPTS_MAX times in all, queued behind other re-runs whose first read was
 *   the same (a document, or an index range's start): the hot row contenders race for is
 *   nearly always what they read first, so N contenders take N runs instead of N²
 *   attempts, while re-runs on different rows proceed side by side.
 * - Early lock release (DESIGN.md §4): on a shard whose writer lends its pending state
 *   (ShardAccess.pendingView, .enqueue), a mutation's reads by id see the writes queued or
 *   in flight there, and its commit carries the view's token: it is acknowledged after
 *   them and fails with them. A re-run leaves the lane as soon as its unit is queued, so
 *   the next re-run on the same row reads it pending: contenders on a hot row commit one
 *   after another without waiting for a flush each. Without a view (or when a range read
 *   found pending writes in its range) a re-run first waits for the commits in flight,
 *   which it would otherwise conflict with again at once. A run that writes nothing but
 *   read pending writes answers once they are durable (settleRead).
 * - A first run that finds re-runs queued on its own first read queues behind them
 *   instead of committing (it would most likely make them lose again). From the third
 *   attempt on a re-run also sleeps a jittered backoff. `ctx.now()` and `ctx.random()`
 *   repeat in every re-run.
 * - A query or mutation handler that runs past `functionRunMsMax` (an action past
 *   `actionRunMsMax`) is abandoned with FUNCTION_TIMEOUT; nothing it did commits.
 * - A mutation with `(clientId, seq)` commits a receipt holding its result in the same
 *   segment as its writes; a call whose receipt exists is answered from it (same value,
 *   original ts, `replayed: true`) and not run — after a restart or a takeover too, since
 *   receipts are in the log. Concurrent calls with one key and identity in this process
 *   join the first; a duplicate committed by any other path makes the run conflict (its
 *   read set holds the receipt's absence), and the re-run finds the receipt. Only
 *   successes leave receipts: a failed mutation wrote nothing, and re-sending it runs it
 *   again.
 * - A receipt records its owner (receiptOwner.ts): a call of another identity with its
 *   key learns nothing of it and runs nothing (RECEIPT_IDENTITY_MISMATCH). With
 *   `ackedThrough`, the receipt records the client's floor (ackedThrough + 1): the
 *   client's receipts below it are pruned, and a call with a seq below the highest floor
 *   of any shard is refused (MUTATION_SEQ_BELOW_FLOOR), never run a second time.
 * - An action runs once, with no transaction; it calls queries and mutations (internal
 *   ones too) through the runtime.
 *
 * Errors are CairnErrors with stable codes: FUNCTION_NOT_FOUND, INVALID_ARGUMENT (naming
 * the bad field's path), APP_ERROR (the handler's deliberate AppError, with its data),
 * FUNCTION_FAILED (the handler threw anything else: an Internal error naming only the
 * call's request id; the stack is logged), FUNCTION_TIMEOUT, WRITE_CONFLICT (attempts exhausted), or what a database call or the engine
 * raised. A mutation that fails writes nothing.
 */
export interface ShardAccess {
  /** Everything at or below it is applied locally: the ts a run reads at. */
  readonly readTs: number;
  readonly local: LocalStore;
  commit(unit: WriteUnit): Promise<CommitResult>;
  /**
   * `commit` that throws its refusals at once and returns once the unit is queued (the
   * promise settles with its durability): re-runs on a hot key then follow each other
   * without waiting for a flush. Optional: without it, `commit`.
   */
  enqueue?(unit: WriteUnit): Promise<CommitResult>;
  /**
   * The writer's pending state for one mutation run (early lock release: reads by id see
   * writes queued but not yet durable), or null where the shard is not written here.
   */
  pendingView?(): PendingView | null;
  /**
   * For a run that read through a PendingView and writes nothing: the ts it is serialized
   * at, once what it read is durable (WRITE_CONFLICT: run it again). See ShardEngine.settleRead.
   */
  settleRead?(read: Pick<WriteUnit, "readTs" | "readSet" | "conflictsWith"> & { readonly pendingRead: PendingReadToken }): Promise<number>;
}

/** Every shard of the deployment, in shard order, and the ts queries read all of them at. */
export interface ShardSet {
  readonly shards: readonly ShardAccess[];
  /** One ts at which every shard's local copy is complete (DESIGN.md §5). */
  readonly readTs: number;
}

export interface FunctionRuntimeOptions {
  readonly app: App;
  readonly catalog: Catalog;
  /** A deployment of one shard, or `shards` for several (exactly one of the two). */
  readonly shard?: ShardAccess;
  readonly shards?: ShardSet;
  readonly clock?: Clock;
  readonly random?: Random;
  /** Longest run of a query or mutation handler (default FUNCTION_RUN_MS_MAX); then FUNCTION_TIMEOUT. */
  readonly functionRunMsMax?: number;
  /** Longest run of an action handler (default ACTION_RUN_MS_MAX). */
  readonly actionRunMsMax?: number;
  /** Where a function's failure is logged with its stack and request id (default: stderr). */
  readonly log?: (line: string) => void;
  /**
   * Called once per top-level call as it settles (before its caller learns the outcome),
   * with its log entry: what it printed (its nested calls' lines included), its outcome
   * and duration. Calls an action makes report nothing of their own. Must not throw (what
   * it throws is logged and the call's outcome stands).
   */
  readonly onCallEnded?: (entry: FunctionLogEntry) => void;
  /**
   * Whether what functions print also goes to the console, prefixed with path and request
   * id (default true). Off when the entries carry the lines instead (`--log-format json`).
   */
  readonly echoConsole?: boolean;
}

export interface CallOptions {
  readonly identity?: UserIdentity | null;
  /** Allow internal functions (calls from actions, admins). Default false: a client's call. */
  readonly internal?: boolean;
}

export interface QueryCallOptions extends CallOptions {
  /** Read at this ts instead of the shard's current readTs (a subscription's consistent ts). */
  readonly readTs?: number;
  /**
   * Note whether the result is one read's rows returned unchanged (ResultGuard), and if
   * so return it as a DiffableResult: a subscription of a session that takes diffs.
   */
  readonly describe?: boolean;
}

export interface MutationCallOptions extends CallOptions {
  /**
   * The scheduler's runner (server/JobRunner) only: the run is scheduled job `job`'s, on
   * the job's own shard. It reads the job first and runs only if the job is still pending
   * (else it answers `skipped`), and marks it done in the same commit: a job's mutation
   * commits exactly once, and a cancellation either precedes it or finds it done.
   */
  readonly job?: DocumentId;
  readonly clientId?: string;
  readonly seq?: number;
  /**
   * With (clientId, seq): the client has the result of every seq up to this one (below
   * `seq`). Its receipts up to it are pruned, and a seq up to it is refused from then on.
   */
  readonly ackedThrough?: number;
}

/** What the receipts say of a call's (clientId, seq), for the identity making it. */
export type ReceiptLookup =
  | { readonly kind: "none" }
  | { readonly kind: "found"; readonly ts: number; readonly result: string }
  /** The key holds another identity's receipt: nothing of it may be told. */
  | { readonly kind: "another" }
  /** The seq is below the client's floor: acknowledged, pruned, never to run again. */
  | { readonly kind: "belowFloor"; readonly floorSeq: number };

export interface QueryRun {
  readonly value: Value;
  readonly readRanges: KeyRange[];
  readonly readTs: number;
}

export interface RecordedQueryRun {
  readonly outcome: { readonly kind: "ok"; readonly value: Value } | { readonly kind: "failed"; readonly error: unknown };
  /** What the run read, up to where it failed. */
  readonly readRanges: KeyRange[];
  readonly readTs: number;
  /** With `describe`: the result as a diffable one, when it provably is (null: it is not, or the run failed). */
  readonly diffable?: DiffableResult | null;
}

export interface MutationRun {
  readonly value: Value;
  /** The commit ts (the read ts for a mutation that wrote nothing and carried no receipt). */
  readonly ts: number;
  /** Answered from an existing receipt: not run again. */
  readonly replayed: boolean;
  /** Runs of the handler, 1 when there was no conflict (0 when replayed). */
  readonly attempts: number;
  /** A scheduled job's run (MutationCallOptions.job) found the job no longer pending: nothing ran. */
  readonly skipped?: boolean;
  readonly writeRanges: KeyRange[];
}

export interface ActionRun {
  readonly value: Value;
}

const CLIENT_ID_CHARS_MAX = 256;
/** A call's request id: 8 random bytes, unique enough to find one call in a log. */
const REQUEST_ID_BYTES = 8;

/** The lane a mutation runs on, and the route of its shardBy value (null: none, or not needed; see placementOf). */
interface Placement {
  readonly lane: number;
  readonly route: Uint8Array | null;
}

/** A run that is done, queued on its writer, or to run again in the lane of `laneKey`. */
type Attempt =
  | { readonly kind: "done"; readonly run: MutationRun }
  /** Queued on its shard's writer: `durable` settles with its commit. */
  | { readonly kind: "queued"; readonly durable: Promise<MutationRun> }
  /**
   * Run again, after the commits issued up to `ticket` settled when `waitForCommits` (the
   * run read without them and would lose again), else at once: a shard that lends its
   * pending writes to reads (PendingView) shows a re-run what it lost to.
   */
  | { readonly kind: "again"; readonly laneKey: string; readonly ticket: number; readonly waitForCommits: boolean };

export class FunctionRuntime {
  private currentApp: App;
  private currentCatalog: Catalog;
  private readonly shards: ShardSet;
  private readonly locals: readonly LocalStore[];
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly commitsInFlight = new Set<number>();
  private commitsIssued = 0;
  private settledWaiters: { readonly ticket: number; readonly resolve: () => void }[] = [];
  private readonly lanes = new RunLanes();
  private readonly receiptCalls = new Map<string, Promise<MutationRun>>();
  /** The last mutation's `now` (and `_creationTime`), see nextMutationNowMs. */
  private lastMutationNowMs = 0;
  private conflictCount = 0;
  private laneDeferrals = 0;
  private pendingReadRuns = 0;
  private turnsWaited = 0;
  private readonly functionRunMsMax: number;
  private readonly actionRunMsMax: number;
  /** Handlers running now, with their deadlines on the monotonic clock; one watchdog loop checks them. */
  private readonly running = new Set<{ readonly deadlineMs: number; readonly expire: () => void }>();
  private watchdog: Promise<void> | null = null;
  private readonly log: (line: string) => void;
  private readonly callStart: CallStart;
  /** Takes each top-level call's log entry (null: nobody listens, and no entry is built). */
  private readonly callEnded: ((entry: FunctionLogEntry) => void) | null;
  /** The node's file storage (null: none, and ctx.storage's URLs and bytes are FILE_STORAGE_UNAVAILABLE). */
  private fileService: FileService | null = null;
  /** Hears of jobs committed (their shard, and the earliest one's due time): the shard's runner wakes for them. */
  private jobsScheduled: ((lane: number, dueMs: number) => void) | null = null;

  constructor(options: FunctionRuntimeOptions) {
    this.currentApp = options.app;
    this.currentCatalog = options.catalog;
    this.shards = shardSetOf(options);
    this.locals = this.shards.shards.map((shard) => shard.local);
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? systemRandom;
    this.functionRunMsMax = checkDuration(options.functionRunMsMax ?? FUNCTION_RUN_MS_MAX, "functionRunMsMax");
    this.actionRunMsMax = checkDuration(options.actionRunMsMax ?? ACTION_RUN_MS_MAX, "actionRunMsMax");
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.callStart = { owner: this, clock: this.clock, echo: options.echoConsole ?? true, newRequestId: () => this.newRequestId() };
    const onCallEnded = options.onCallEnded;
    this.callEnded =
      onCallEnded === undefined
        ? null
        : (entry) => {
            try {
              onCallEnded(entry);
            } catch (error) {
              this.log(`the log entry of ${entry.path} (request ${entry.requestId}) was not taken: ${(error as Error)?.message ?? String(error)}`);
            }
          };
    prefixConsoleInFunctions();
  }

  get app(): App {
    return this.currentApp;
  }

  get catalog(): Catalog {
    return this.currentCatalog;
  }

  /**
   * Runs `app`'s functions from now on, over `catalog` (its schema bound to the
   * deployment's catalog, which the caller resolved): `cairn dev` reloading edited code.
   * Runs already started finish with the code they started with; every later call looks
   * its function up in `app`.
   */
  replaceApp(app: App, catalog: Catalog): void {
    this.currentApp = app;
    this.currentCatalog = catalog;
  }

  /** Serves ctx.storage's URLs and bytes from now on (the node's FileStore, built after the runtime). */
  useFiles(files: FileService): void {
    this.fileService = files;
  }

  get files(): FileService | null {
    return this.fileService;
  }

  /** `listener` hears of every commit that scheduled jobs, once it is durable (one listener: the node's JobRunner). */
  onJobsScheduled(listener: (lane: number, dueMs: number) => void): void {
    this.jobsScheduled = listener;
  }

  /** What shard `lane`'s scheduler runner needs of its jobs, from that shard's local copy. */
  jobsOfShard(lane: number, options: { readonly nowMs: number; readonly limit: number; readonly finishedBeforeMs: number; readonly upkeep?: boolean }): Promise<ShardJobs> {
    const shard = this.shards.shards[lane];
    if (shard === undefined) throw new CairnError("INVALID_ARGUMENT", `no shard ${lane} (the deployment has ${this.shards.shards.length})`);
    return readShardJobs(shard.local, shard.readTs, this.catalog, options);
  }

  /**
   * A stored file's document at the deployment's readTs (null: none), read directly
   * rather than as a function call: a download is not a call of the app's, and would
   * crowd the function log.
   */
  storedFile(id: DocumentId): StoredFile | null {
    const reads = new SnapshotReads(this.locals, this.shards.readTs, this.catalog, new ReadRecorder(), null);
    try {
      checkStorageId(this.catalog, id);
      const document = reads.document(id).document;
      return document === null ? null : storedFileOf(document);
    } finally {
      reads.finish();
    }
  }

  /** Whether any shard's stored files refer to upload `upload` (its chunks are someone's), each shard read at its own local readTs. */
  async uploadReferenced(upload: string): Promise<boolean> {
    for (const shard of this.shards.shards) if (await uploadReferenced(shard.local, shard.readTs, this.catalog, upload)) return true;
    return false;
  }

  get shardCount(): number {
    return this.shards.shards.length;
  }

  /**
   * The shard a call of mutation `path` with `args` runs on (its shardBy lane), after the
   * same checks the call makes: FUNCTION_NOT_FOUND, INVALID_ARGUMENT.
   */
  mutationShard(path: string, args: unknown = {}, options: CallOptions = {}): number {
    const fn = this.app.lookup(path, "mutation", { internal: options.internal === true });
    return this.placementOf(path, fn, this.validateArgs(fn, args), false).lane;
  }

  /** A receipt of (clientId, seq) in any shard's local store (a mutation's receipt lives on its lane), whoever wrote it. */
  receipt(clientId: string, seq: number): ClientReceipt | null {
    for (const local of this.locals) {
      const found = local.receipt(clientId, seq);
      if (found !== null) return found;
    }
    return null;
  }

  /**
   * What a call of `identity` may learn of (clientId, seq): its own receipt, or that the
   * seq is below the client's floor (the highest of every shard's: a client's receipts
   * live on their mutations' lanes), or that the key is another identity's.
   */
  receiptFor(clientId: string, seq: number, identity: UserIdentity | null | undefined): ReceiptLookup {
    const owner = receiptOwnerOf(identity);
    const floorSeq = Math.max(...this.locals.map((local) => local.receiptFloor(clientId, owner)));
    if (seq < floorSeq) return { kind: "belowFloor", floorSeq };
    const stored = this.receipt(clientId, seq);
    if (stored === null) return { kind: "none" };
    if (!ownsReceipt(owner, stored.owner)) return { kind: "another" };
    return { kind: "found", ts: stored.ts, result: stored.result };
  }

  /** Commits refused with WRITE_CONFLICT so far (each was re-run or reported). */
  get conflicts(): number {
    return this.conflictCount;
  }

  /** First runs not committed but queued behind re-runs on what they read first (each was run again). */
  get deferrals(): number {
    return this.laneDeferrals;
  }

  /** First runs of mutations that waited before their first read for the runs ahead of them on that document (RunLanes). */
  get documentTurnsWaited(): number {
    return this.turnsWaited;
  }

  /** Mutation runs that read writes still pending on their shard's writer (early lock release) and went on to commit or answer. */
  get pendingReads(): number {
    return this.pendingReadRuns;
  }

  async runQuery(path: string, args: unknown = {}, options: QueryCallOptions = {}): Promise<QueryRun> {
    const run = await this.runQueryRecorded(path, args, options);
    if (run.outcome.kind === "failed") throw run.outcome.error;
    return { value: run.outcome.value, readRanges: run.readRanges, readTs: run.readTs };
  }

  /**
   * Runs a query and reports its outcome with what it read, also when it failed: a
   * subscription whose query threw must re-run when what it read before throwing changes
   * (the failure may depend on it). Never rejects for the query's own errors.
   */
  runQueryRecorded(path: string, args: unknown = {}, options: QueryCallOptions = {}): Promise<RecordedQueryRun> {
    return runAsFunctionCall(path, "query", this.callStart, (record) =>
      reportWhenSettled(record, { path, kind: "query" }, this.runQueryRecordedInCall(path, args, options), this.callEnded, (run) =>
        run.outcome.kind === "failed" ? { error: run.outcome.error } : null,
      ),
    );
  }

  private async runQueryRecordedInCall(path: string, args: unknown, options: QueryCallOptions): Promise<RecordedQueryRun> {
    const run = await this.runQueryOnce(path, args, options);
    // A guarded result is a Proxy, and a few things refuse proxies (structuredClone): a
    // handler that failed unexpectedly with one runs again without, so a subscription is
    // answered exactly as a plain call (not diffable).
    if (options.describe === true && run.outcome.kind === "failed" && hasErrorCode(run.outcome.error, "FUNCTION_FAILED")) {
      return { ...(await this.runQueryOnce(path, args, { ...options, describe: false })), diffable: null };
    }
    return run;
  }

  private async runQueryOnce(path: string, args: unknown, options: QueryCallOptions): Promise<RecordedQueryRun> {
    const readTs = options.readTs ?? this.shards.readTs;
    const recorder = new ReadRecorder();
    try {
      const fn = this.app.lookup(path, "query", { internal: options.internal === true });
      const checkedArgs = this.validateArgs(fn, args);
      const reads = new SnapshotReads(this.locals, readTs, this.catalog, recorder, null);
      if (options.describe === true) reads.guard = new ResultGuard();
      const nowMs = this.clock.nowMs();
      const db = new DatabaseReader(reads);
      const floats = seededFloats(this.random, null);
      const guard = reads.guard;
      // A result that depends on the clock or on chance is another at the next run: never diffable.
      const now = guard === null ? () => nowMs : () => (guard.impure(), nowMs);
      const random = guard === null ? floats : () => (guard.impure(), floats());
      const ctx = { db, auth: authOf(options.identity), now, random, storage: queryStorage(db, this.fileService) };
      const value = await this.runHandler(path, fn, ctx, checkedArgs, reads);
      const diffable = reads.guard?.resultFor(value) ?? null;
      return { outcome: { kind: "ok", value }, readRanges: recorder.keyRanges(), readTs, ...(options.describe === true ? { diffable } : {}) };
    } catch (error) {
      return { outcome: { kind: "failed", error }, readRanges: recorder.keyRanges(), readTs };
    }
  }

  runMutation(path: string, args: unknown = {}, options: MutationCallOptions = {}): Promise<MutationRun> {
    return runAsFunctionCall(path, "mutation", this.callStart, (record) =>
      reportWhenSettled(record, { path, kind: "mutation" }, this.runMutationInCall(path, args, options), this.callEnded),
    );
  }

  private async runMutationInCall(path: string, args: unknown, options: MutationCallOptions): Promise<MutationRun> {
    const fn = this.app.lookup(path, "mutation", { internal: options.internal === true });
    const checkedArgs = this.validateArgs(fn, args);
    const receiptKey = checkReceiptKey(options);
    if (receiptKey === null) return this.runAttempts(path, fn, checkedArgs, options, null);
    const joined = this.receiptCalls.get(receiptKey.key);
    if (joined !== undefined) {
      const first = await joined;
      return mutationRun(first.value, first.ts, true, 0, null);
    }
    const call = this.runAttempts(path, fn, checkedArgs, options, receiptKey);
    this.receiptCalls.set(receiptKey.key, call);
    try {
      return await call;
    } finally {
      this.receiptCalls.delete(receiptKey.key);
    }
  }

  runAction(path: string, args: unknown = {}, options: CallOptions = {}): Promise<ActionRun> {
    return runAsFunctionCall(path, "action", this.callStart, (record) =>
      reportWhenSettled(record, { path, kind: "action" }, this.runActionInCall(path, args, options), this.callEnded),
    );
  }

  private async runActionInCall(path: string, args: unknown, options: CallOptions): Promise<ActionRun> {
    const fn = this.app.lookup(path, "action", { internal: options.internal === true });
    const checkedArgs = this.validateArgs(fn, args);
    const inner = { identity: options.identity ?? null, internal: true };
    const ctx = {
      auth: authOf(options.identity),
      scheduler: actionScheduler(() => this.clock.nowMs(), async (target, targetArgs) => (await this.runMutation(target, targetArgs, { internal: true })).value),
      storage: actionStorage(
        this.fileService,
        async (target, targetArgs) => (await this.runQuery(target, targetArgs, { internal: true })).value,
        async (target, targetArgs) => (await this.runMutation(target, targetArgs, { internal: true })).value,
      ),
      runQuery: async (target: string, targetArgs?: unknown) => (await this.runQuery(target, targetArgs ?? {}, inner)).value,
      runMutation: async (target: string, targetArgs?: unknown) => (await this.runMutation(target, targetArgs ?? {}, inner)).value,
      runAction: async (target: string, targetArgs?: unknown) => (await this.runAction(target, targetArgs ?? {}, inner)).value,
    };
    return { value: await this.runHandler(path, fn, ctx, checkedArgs, null) };
  }

  private async runAttempts(
    path: string,
    fn: AnyFunction,
    args: unknown,
    options: MutationCallOptions,
    receipt: ReceiptKey | null,
  ): Promise<MutationRun> {
    const nowMs = this.nextMutationNowMs();
    const { lane, route } = this.placementOf(path, fn, args, receipt !== null);
    // Drawn on the first ctx.random() call of the first run, then the same in every re-run.
    const seed = { value: null as number | null };
    let again = null as { laneKey: string; ticket: number; waitForCommits: boolean } | null;
    for (let attempt = 1; attempt <= MUTATION_ATTEMPTS_MAX; attempt++) {
      const run = (inLane: boolean) => this.attempt(path, fn, args, options, receipt, { lane, route, nowMs, seed, attempt, inLane });
      const previous: { laneKey: string; ticket: number; waitForCommits: boolean } | null = again;
      const outcome: Attempt =
        previous === null
          ? await run(false)
          : await this.inLane(previous.laneKey, () => this.afterBackoff(attempt, previous.waitForCommits ? previous.ticket : 0, () => run(true)));
      if (outcome.kind === "done") return outcome.run;
      // Out of the lane first: the next re-run on this key reads this one's pending write.
      if (outcome.kind === "queued") return outcome.durable;
      again = { laneKey: previous?.laneKey ?? outcome.laneKey, ticket: outcome.ticket, waitForCommits: outcome.waitForCommits };
    }
    throw new CairnError("WRITE_CONFLICT", `mutation ${path} lost ${MUTATION_ATTEMPTS_MAX} optimistic-concurrency races in a row; retry later`, {
      details: { path, attempts: MUTATION_ATTEMPTS_MAX },
    });
  }

  private async attempt(
    path: string,
    fn: AnyFunction,
    args: unknown,
    options: MutationCallOptions,
    receipt: ReceiptKey | null,
    run: { lane: number; route: Uint8Array | null; nowMs: number; seed: { value: number | null }; attempt: number; inLane: boolean },
  ): Promise<Attempt> {
    if (receipt !== null) {
      // A re-run looks again: the commit it lost to may have been this very mutation, sent twice.
      const stored = this.receiptFor(receipt.clientId, receipt.seq, options.identity);
      if (stored.kind === "found") return { kind: "done", run: mutationRun(decodeValueText(stored.result), stored.ts, true, 0, null) };
      if (stored.kind !== "none") throw receiptRefusal(stored, receipt);
    }
    // Its hold on the lane of the document it read first, if it took one: left once its write is queued, or it ended.
    const hold = new LaneHold();
    try {
      const prepared = await this.prepare(path, fn, args, options, receipt, run, hold);
      if (prepared.refusal !== null) {
        // A read through the writer's pending state refused: re-run, at once or once the
        // writes it waited for are durable.
        this.conflictCount++;
        return { kind: "again", laneKey: prepared.laneKey, ticket: this.commitsIssued, waitForCommits: prepared.refusal === "pending" };
      }
      if (prepared.unit === null) {
        // It writes nothing: the runs behind it need not wait for its answer.
        hold.end();
        const token = prepared.view?.token;
        const shard = this.shards.shards[run.lane]!;
        if (token === undefined || shard.settleRead === undefined) return { kind: "done", run: mutationRun(prepared.value, prepared.readTs, false, run.attempt, prepared.writes, prepared.skipped) };
        // It read writes not yet durable: its answer waits for them (and is run again if one fails).
        this.pendingReadRuns++;
        try {
          const ts = await shard.settleRead({ readTs: prepared.readTs, ...prepared.reads, pendingRead: token });
          return { kind: "done", run: mutationRun(prepared.value, ts, false, run.attempt, prepared.writes, prepared.skipped) };
        } catch (error) {
          if (!hasErrorCode(error, "WRITE_CONFLICT")) throw error;
          this.conflictCount++;
          return { kind: "again", laneKey: prepared.laneKey, ticket: this.commitsIssued, waitForCommits: false };
        }
      }
      if (!run.inLane && !hold.holding && this.lanes.has(prepared.laneKey)) {
        // Re-runs are queued on what this run read first: it would most likely conflict with
        // them, and committing anyway would make them lose instead. It queues behind them.
        this.laneDeferrals++;
        return { kind: "again", laneKey: prepared.laneKey, ticket: this.commitsIssued, waitForCommits: prepared.view === null };
      }
      const shard = this.shards.shards[run.lane]!;
      let durable: Promise<CommitResult>;
      try {
        if (shard.enqueue !== undefined) {
          durable = this.commitTracked(shard, prepared.unit, true);
        } else {
          await (durable = this.commitTracked(shard, prepared.unit, false));
        }
      } catch (error) {
        if (!hasErrorCode(error, "WRITE_CONFLICT")) throw error;
        this.conflictCount++;
        return { kind: "again", laneKey: prepared.laneKey, ticket: this.commitsIssued, waitForCommits: prepared.view === null };
      }
      const { value, writes, jobsDueMs } = prepared;
      return {
        kind: "queued",
        durable: durable.then(({ ts }) => {
          if (jobsDueMs !== null) this.jobsScheduled?.(run.lane, jobsDueMs);
          return mutationRun(value, ts, false, run.attempt, writes);
        }),
      };
    } finally {
      hold.end();
    }
  }

  /**
   * Runs the handler against a fresh snapshot and builds the write unit (null: nothing to
   * commit). A function of its own so that the run's state (reads, pending writes,
   * recorder, ctx) is garbage once it returns: a mutation waiting for its flush keeps only
   * its unit, which the engine's queue holds anyway. With a thousand commits in flight,
   * what they keep alive decides how much the garbage collector copies.
   */
  private async prepare(
    path: string,
    fn: AnyFunction,
    args: unknown,
    options: MutationCallOptions,
    receipt: ReceiptKey | null,
    run: { lane: number; route: Uint8Array | null; nowMs: number; seed: { value: number | null }; inLane: boolean },
    hold: LaneHold,
  ): Promise<PreparedRun> {
    const shard = this.shards.shards[run.lane]!;
    // The shard's state now: its store at the frontier, and its writer's pending writes when it has them.
    const snapshotNow = () => {
      const view = shard.pendingView?.() ?? null;
      return { view, readTs: view?.readTs ?? shard.readTs };
    };
    const first = snapshotNow();
    const recorder = new ReadRecorder();
    const pending = new PendingWrites();
    const reads = new SnapshotReads(this.locals, first.readTs, this.catalog, recorder, pending, { lane: run.lane, path }, first.view);
    const laneKeyOf = (firstReadKey: string) => `${run.lane}:${firstReadKey}`;
    if (first.view !== null && !run.inLane) {
      // A first run reading a document first takes that document's lane until its write is
      // queued; one that finds it taken waits its turn and then reads the write queued before
      // it, instead of reading the same revision as the others and losing the race to them.
      reads.firstDocumentTurn = (id) => {
        const key = laneKeyOf(documentReadKey(id));
        const leave = this.lanes.tryEnter(key);
        if (leave !== null) {
          hold.take(leave);
          return undefined;
        }
        this.turnsWaited++;
        return this.turnOn(key, hold).then((inTurn) => (inTurn ? snapshotNow() : null));
      };
    }
    const db = new DatabaseWriter(reads, pending, this.random, run.nowMs);
    // The scheduler and storage are made when the run first uses them: most runs use neither.
    const made: { scheduler: MutationScheduler | null; storage: StorageWriter | null } = { scheduler: null, storage: null };
    const schedulerOf = () => (made.scheduler ??= new MutationScheduler(db, this.app, this.catalog, run.nowMs, run.route ?? ZERO_ROUTE));
    const files = this.fileService;
    const ctx = {
      db,
      auth: authOf(options.identity),
      now: () => run.nowMs,
      random: seededFloats(this.random, run.seed),
      get scheduler() {
        return schedulerOf();
      },
      get storage() {
        return (made.storage ??= mutationStorage(db, files));
      },
    };
    const laneKeyOfRun = (documents: readonly { id: string }[]) => laneKeyOf(recorder.firstReadKey() ?? documents[0]?.id ?? path);
    let value: Value = null;
    try {
      // A scheduled job's run: only while the job is pending, and marked done in this commit.
      const job = options.job === undefined ? null : await schedulerOf().job(options.job);
      if (job !== null && job.state.kind === "pending") {
        try {
          value = await this.runHandler(path, fn, ctx, args, reads, true);
          schedulerOf().recordEnd(job, { kind: "success" });
        } finally {
          reads.finish();
        }
      } else if (options.job !== undefined) {
        reads.finish();
        return { refusal: null, value: null, readTs: reads.readTs, writes: null, unit: null, laneKey: laneKeyOfRun([]), view: reads.view, reads: { readSet: recorder.readSet() }, skipped: true, jobsDueMs: null };
      } else {
        value = await this.runHandler(path, fn, ctx, args, reads);
      }
    } catch (error) {
      if (reads.refusal === null) throw error;
    }
    // The snapshot the run read: a later one if it waited for its turn on a document.
    const { readTs, view } = reads;
    // A refused read ends the run, also when the handler caught it and went on: what it did
    // then rests on a read it never got.
    if (reads.refusal !== null) return { refusal: reads.refusal, value: null, readTs, writes: null, unit: null, laneKey: laneKeyOfRun([]), view, reads: null, skipped: false, jobsDueMs: null };
    const writes = pending.toWrites();
    const { documents, indexWrites } = writes;
    const laneKey = laneKeyOfRun(documents);
    const documentRangeConflict = recorder.documentRangeConflict();
    if (documents.length === 0 && receipt === null) {
      const read = { readSet: recorder.readSet(), ...(documentRangeConflict !== null ? { conflictsWith: documentRangeConflict } : {}) };
      return { refusal: null, value, readTs, writes, unit: null, laneKey, view, reads: read, skipped: false, jobsDueMs: null };
    }
    const token = view?.token;
    if (token !== undefined) this.pendingReadRuns++;
    const unit: WriteUnit = {
      readTs,
      ...(token !== undefined ? { pendingRead: token } : {}),
      documents,
      indexWrites,
      readSet: receipt === null ? recorder.readSet() : { ...recorder.readSet(), receipts: [{ clientId: receipt.clientId, seq: receipt.seq }] },
      ...(documentRangeConflict !== null ? { conflictsWith: documentRangeConflict } : {}),
      ...(receipt !== null ? { receipt: receiptWrite(receipt, encodeValueText(value), run.route, options) } : {}),
    };
    return { refusal: null, value, readTs, writes, unit, laneKey, view, reads: null, skipped: false, jobsDueMs: made.scheduler?.earliestMs ?? null };
  }

  /**
   * Waits for every commit issued up to `ticket` (those in flight when the last run lost:
   * a re-run before they settle would read without them and lose again), then a jittered
   * sleep from the third attempt on.
   */
  private async afterBackoff<T>(attempt: number, ticket: number, run: () => Promise<T>): Promise<T> {
    await this.commitsSettledThrough(ticket);
    if (attempt >= 3) {
      const ceilingMs = Math.min(MUTATION_BACKOFF_MAX_MS, 2 ** (attempt - 3));
      await this.clock.sleep(this.random.float() * ceilingMs);
    }
    return run();
  }

  /**
   * Waits for the lane `key` (true), or for a quarter of the run's time limit (false): the
   * wait counts against the limit, and a holder stuck until its own limit must not take
   * every run behind it down too. One that stops waiting reads as if there were no lane
   * (it may then lose a race and re-run); it still takes its place in the lane when its
   * turn comes, and leaves it once it ended.
   */
  private turnOn(key: string, hold: LaneHold): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimer(this.functionRunMsMax / 4, () => resolve(false));
      void this.lanes.enter(key).then((leave) => {
        timer.cancel();
        hold.take(leave);
        resolve(true);
      });
    });
  }

  /** Runs `job` after every earlier job of the same lane finished: re-runs on one hot document go one at a time. */
  private inLane<T>(key: string, job: () => Promise<T>): Promise<T> {
    return this.lanes.within(key, job);
  }

  /**
   * Commits with a ticket, so that a re-run can wait for every commit issued before it.
   * Tickets increase and a Set iterates in insertion order, so the first ticket of
   * `commitsInFlight` is the oldest one still unsettled.
   */
  private commitTracked(shard: ShardAccess, unit: WriteUnit, enqueue: boolean): Promise<CommitResult> {
    // Enqueued: a refusal throws here, before any ticket (nothing was issued).
    const durable = enqueue ? shard.enqueue!(unit) : shard.commit(unit);
    const ticket = ++this.commitsIssued;
    this.commitsInFlight.add(ticket);
    return durable.finally(() => {
      this.commitsInFlight.delete(ticket);
      this.wakeSettledWaiters();
    });
  }

  /** Resolves once every commit with a ticket up to `ticket` has settled. */
  private commitsSettledThrough(ticket: number): Promise<void> {
    if (this.oldestUnsettled() > ticket) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push({ ticket, resolve }));
  }

  private oldestUnsettled(): number {
    const oldest = this.commitsInFlight.values().next();
    return oldest.done === true ? Number.POSITIVE_INFINITY : oldest.value;
  }

  private wakeSettledWaiters(): void {
    if (this.settledWaiters.length === 0) return;
    const oldest = this.oldestUnsettled();
    const waiting: typeof this.settledWaiters = [];
    for (const waiter of this.settledWaiters) {
      if (oldest > waiter.ticket) waiter.resolve();
      else waiting.push(waiter);
    }
    this.settledWaiters = waiting;
  }

  /**
   * Settles like `run`, or fails with FUNCTION_TIMEOUT once it has run `limitMs`. A handler
   * cannot be stopped, but nobody waits for it any more: its run is finished (later
   * database calls fail), its lane is released, and whatever it would have written is
   * never committed.
   */
  private withinTimeLimit<T>(run: Promise<T>, limitMs: number, path: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = {
        deadlineMs: this.clock.monotonicMs() + limitMs,
        expire: () =>
          reject(new CairnError("FUNCTION_TIMEOUT", `${path} ran longer than ${limitMs} ms and was abandoned; nothing it did is committed`, {
            details: { path, limitMs },
          })),
      };
      this.running.add(call);
      this.watchdog ??= this.watchRunning();
      run.then(
        (value) => {
          this.running.delete(call);
          resolve(value);
        },
        (error: unknown) => {
          this.running.delete(call);
          reject(error);
        },
      );
    });
  }

  /** Runs while handlers run: every FUNCTION_WATCHDOG_INTERVAL_MS, expires those past their deadline. */
  private async watchRunning(): Promise<void> {
    try {
      while (this.running.size > 0) {
        await this.clock.sleep(FUNCTION_WATCHDOG_INTERVAL_MS);
        const nowMs = this.clock.monotonicMs();
        for (const call of this.running) {
          if (nowMs < call.deadlineMs) continue;
          this.running.delete(call);
          call.expire();
        }
      }
    } finally {
      this.watchdog = null;
    }
  }

  /**
   * A mutation's `now`, which its inserts take as `_creationTime`: the wall clock, but
   * strictly above the previous mutation's (by a microsecond when the clock has not
   * moved), so that documents one caller inserts one after the other list in that order
   * in every index (whose keys end with `_creationTime, _id`) instead of by random id
   * when they land in the same millisecond.
   */
  private nextMutationNowMs(): number {
    const now = this.clock.nowMs();
    this.lastMutationNowMs = now > this.lastMutationNowMs ? now : this.lastMutationNowMs + 0.001;
    return this.lastMutationNowMs;
  }

  /**
   * Where a mutation with (validated) `args` runs: its shardBy lane, or 0, with the route
   * its receipt records. The route is null without shardBy, and with one shard unless
   * `receiptWritten`: then the lane is 0 whatever the value, and hashing it would be
   * wasted on a mutation that leaves no receipt.
   */
  private placementOf(path: string, fn: AnyFunction, args: unknown, receiptWritten: boolean): Placement {
    const shardBy = fn.shardBy;
    if (shardBy === null) return { lane: 0, route: null };
    if (shardBy.kind === "route") {
      let route: Uint8Array | null;
      try {
        route = shardBy.of(args, this.catalog);
      } catch (error) {
        throw new CairnError("INVALID_ARGUMENT", `mutation ${path}: ${(error as Error).message}`, { cause: error, details: { path } });
      }
      return route === null ? { lane: 0, route: null } : { lane: shardOfRoute(route, this.shards.shards.length), route };
    }
    // Evaluated with one shard too, so that a shardBy that fails shows in development.
    let value: unknown;
    try {
      value = shardBy.kind === "arg" ? (args as Record<string, unknown>)[shardBy.name] : shardBy.of(args);
      if (value !== undefined) validateValue(value);
    } catch (error) {
      throw new CairnError("INVALID_ARGUMENT", `mutation ${path}: its shardBy ${shardBy.kind === "arg" ? `argument ${shardBy.name}` : "function"} gave no shard-key value: ${(error as Error).message}`, {
        cause: error,
        details: { path },
      });
    }
    const lanes = this.shards.shards.length;
    if (lanes === 1 && !receiptWritten) return { lane: 0, route: null };
    const route = routeOfValue(value as Value | undefined);
    return { lane: shardOfRoute(route, lanes), route };
  }

  private validateArgs(fn: AnyFunction, args: unknown): unknown {
    return validateWith(fn.args, args, { noun: "argument", root: "args" }, this.catalog.tableNumberOf);
  }

  private newRequestId(): string {
    return randomHex(this.random, REQUEST_ID_BYTES);
  }

  /**
   * Runs the handler and checks its result. Its deliberate errors (AppError, or Cairn's
   * own errors from a database call) go to the caller as they are; anything else it
   * throws is a failure of the function (FUNCTION_FAILED): its stack is logged here under
   * the call's request id, and the caller learns that id and nothing of the internals.
   */
  private async runHandler(path: string, fn: AnyFunction, ctx: object, args: unknown, reads: SnapshotReads | null, keepReadsOpen = false): Promise<Value> {
    let result: unknown;
    try {
      const run = Promise.resolve((fn.handler as (ctx: object, args: unknown) => unknown)(ctx, args));
      result = await this.withinTimeLimit(run, fn.kind === "action" ? this.actionRunMsMax : this.functionRunMsMax, path);
      if (reads?.guard) result = reads.guard.settle(result);
    } catch (error) {
      // A refused read the handler turned into another error is still the refusal (prepare re-runs it), not the handler's failure.
      if (reads?.refusal) throw error;
      if (isCairnError(error) && !hasErrorCode(error, "APP_ERROR")) throw error;
      if (hasErrorCode(error, "APP_ERROR") && isValue((error as CairnError).data)) throw error;
      // A guarded run's failure is not logged: it runs again unguarded (runQueryRecordedInCall), and that run logs.
      throw this.functionFailed(path, error, !reads?.guard);
    } finally {
      // Kept open for Cairn's own writes after the handler's (a scheduled job's end); closed by the caller.
      if (!keepReadsOpen) reads?.finish();
    }
    if (fn.returns !== null) return validateWith(fn.returns, result, { noun: "return value", root: "result" }, this.catalog.tableNumberOf) as Value;
    const value = result === undefined ? null : result;
    try {
      validateValue(value);
    } catch (error) {
      throw new CairnError("INVALID_ARGUMENT", `invalid return value of ${path}: ${(error as Error).message}`, { cause: error, details: { path } });
    }
    return value;
  }

  /** Logs what `path` threw (its stack) under the call's request id; the error the caller gets names only that id. */
  private functionFailed(path: string, thrown: unknown, logged = true): CairnError {
    const requestId = currentFunctionCall()?.requestId ?? this.newRequestId();
    const what = hasErrorCode(thrown, "APP_ERROR") ? "threw an AppError whose data is not a Cairn value: " : "";
    const stack = thrown instanceof Error ? (thrown.stack ?? `${thrown.name}: ${thrown.message}`) : `a non-Error value: ${String(thrown)}`;
    if (logged) this.log(`function ${path} failed (request ${requestId}): ${what}${stack}`);
    return new CairnError("FUNCTION_FAILED", `${path} failed; request id ${requestId} (the server's log has the details)`, {
      cause: thrown,
      details: { path, requestId },
    });
  }
}

function shardSetOf(options: FunctionRuntimeOptions): ShardSet {
  if ((options.shard === undefined) === (options.shards === undefined)) {
    throw new CairnError("INVALID_ARGUMENT", "a FunctionRuntime runs on `shard` (one) or `shards` (several), exactly one of them");
  }
  if (options.shards !== undefined) {
    if (options.shards.shards.length === 0) throw new CairnError("INVALID_ARGUMENT", "a FunctionRuntime needs at least one shard");
    return options.shards;
  }
  const shard = options.shard!;
  return {
    shards: [shard],
    get readTs() {
      return shard.readTs;
    },
  };
}

/** A mutation run's outcome before its commit (see prepare). */
interface PreparedRun {
  /** A read through the writer's pending state refused (see SnapshotReads.refusal): run again. */
  readonly refusal: "stale" | "pending" | null;
  readonly value: Value;
  readonly readTs: number;
  readonly writes: ReturnType<PendingWrites["toWrites"]> | null;
  readonly unit: WriteUnit | null;
  readonly laneKey: string;
  readonly view: PendingView | null;
  /** What a run that writes nothing read (for settleRead); null for one that commits (its unit holds it). */
  readonly reads: Pick<WriteUnit, "readSet" | "conflictsWith"> | null;
  /** A scheduled job's run that found the job no longer pending (it ran nothing). */
  readonly skipped: boolean;
  /** When the earliest job the run scheduled is due (null: it scheduled none). */
  readonly jobsDueMs: number | null;
}

interface ReceiptKey {
  readonly clientId: string;
  readonly seq: number;
  /** Calls with equal keys join (see runMutation): the same (clientId, seq) and identity, so another's never learns this one's result. */
  readonly key: string;
}

/** The receipt a mutation commits: its owner, and its client's floor when the client sent one. */
function receiptWrite(receipt: ReceiptKey, result: string, route: Uint8Array | null, options: MutationCallOptions): ReceiptWrite {
  const written = { clientId: receipt.clientId, seq: receipt.seq, result, route, owner: receiptOwnerOf(options.identity) };
  return options.ackedThrough === undefined ? written : { ...written, floorSeq: options.ackedThrough + 1 };
}

function receiptRefusal(lookup: Exclude<ReceiptLookup, { kind: "none" } | { kind: "found" }>, receipt: ReceiptKey): CairnError {
  const { clientId, seq } = receipt;
  if (lookup.kind === "another") {
    return new CairnError("RECEIPT_IDENTITY_MISMATCH", `clientId ${JSON.stringify(clientId)} seq ${seq} was written by another identity: nothing ran and nothing of it is told (a mutation re-sent after the caller's identity changed cannot be answered)`, {
      details: { clientId, seq },
    });
  }
  return new CairnError(
    "MUTATION_SEQ_BELOW_FLOOR",
    `seq ${seq} of clientId ${JSON.stringify(clientId)} is below the client's floor ${lookup.floorSeq}: its result was acknowledged and pruned, so it is not run again`,
    { details: { clientId, seq, floorSeq: lookup.floorSeq } },
  );
}

function checkReceiptKey(options: MutationCallOptions): ReceiptKey | null {
  const { clientId, seq, ackedThrough } = options;
  if (clientId === undefined && seq === undefined) {
    if (ackedThrough !== undefined) throw new CairnError("INVALID_ARGUMENT", "ackedThrough is given only with clientId and seq");
    return null;
  }
  if (typeof clientId !== "string" || clientId.length === 0 || clientId.length > CLIENT_ID_CHARS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `clientId must be a non-empty string of at most ${CLIENT_ID_CHARS_MAX} characters when seq is given`);
  }
  // Cairn's own keys (a scheduled job's, `_job:<id>`): a client that took one would answer the job from its receipt.
  if (clientId.startsWith("_") && options.internal !== true) {
    throw new CairnError("INVALID_ARGUMENT", `clientId ${JSON.stringify(clientId)} is reserved: client ids starting with "_" are Cairn's own`);
  }
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0) {
    throw new CairnError("INVALID_ARGUMENT", `seq must be a non-negative integer when clientId is given, not ${String(seq)}`);
  }
  if (ackedThrough !== undefined && !(Number.isSafeInteger(ackedThrough) && ackedThrough >= 0 && ackedThrough < seq)) {
    throw new CairnError("INVALID_ARGUMENT", `ackedThrough must be an integer from 0 to seq - 1 (a client acknowledges only answered mutations), not ${String(ackedThrough)}`, {
      details: { seq, ackedThrough: String(ackedThrough) },
    });
  }
  // An owner is "anonymous" or "user:" and 22 characters (receiptOwner.ts): the key reads one way only.
  return { clientId, seq, key: `${seq}:${receiptOwnerOf(options.identity)}:${clientId}` };
}

function checkDuration(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new CairnError("INVALID_ARGUMENT", `${name} must be a positive number of milliseconds, not ${String(value)}`);
  return value;
}

const ANONYMOUS: Auth = { getUserIdentity: async () => null };

function authOf(identity: UserIdentity | null | undefined): Auth {
  if (identity === null || identity === undefined) return ANONYMOUS;
  return { getUserIdentity: async () => identity };
}

/** A run's result; its write ranges are built only if someone reads them (the sync layer matches segments instead). */
function mutationRun(value: Value, ts: number, replayed: boolean, attempts: number, writes: ReturnType<PendingWrites["toWrites"]> | null, skipped = false): MutationRun {
  let ranges: KeyRange[] | null = null;
  return {
    value,
    ts,
    replayed,
    attempts,
    ...(skipped ? { skipped } : {}),
    get writeRanges() {
      ranges ??= writes === null ? [] : writeRangesOf(writes.documents, writes.indexWrites);
      return ranges;
    },
  };
}

/**
 * `ctx.random`: a generator seeded on first use (most runs never call it, and a seed
 * costs a CSPRNG call). A seed holder shared across re-runs makes them repeat the sequence.
 */
function seededFloats(random: Random, seed: { value: number | null } | null): () => number {
  let seeded: SeededRandom | null = null;
  return () => {
    if (seeded === null) {
      const holder = seed ?? { value: null };
      holder.value ??= Math.floor(random.float() * 0x1_0000_0000);
      seeded = new SeededRandom(holder.value);
    }
    return seeded.float();
  };
}

function isValue(data: unknown): boolean {
  try {
    validateValue(data);
    return true;
  } catch {
    return false;
  }
}

function isCairnError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, kind } = error as { code?: unknown; kind?: unknown };
  return typeof code === "string" && Object.hasOwn(ERROR_CODES, code) && kind === ERROR_CODES[code as keyof typeof ERROR_CODES];
}
