import {
  type Clock,
  CairnError,
  hasErrorCode,
  FORWARD_RETRY_BACKOFF_BASE_MS,
  FORWARD_RETRY_BACKOFF_MAX_MS,
  FORWARDED_MUTATION_TIMEOUT_MS,
  FORWARDED_WRITE_VISIBLE_WAIT_MS,
  randomHex,
  type Random,
} from "../base/index.js";
import type { ForwardedAnswer } from "../fleet/index.js";
import type { MutationRun } from "../functions/index.js";
import { type Value, decodeValue, encodeValue } from "../model/index.js";
import type { SyncBackend } from "../sync/index.js";
import { forwardUnavailable, type RouteFailure, type WriteForwarder } from "./WriteForwarder.js";

export interface NodeBackendOptions {
  /** The node's own runtime: queries always, writes while it writes the shard. */
  readonly local: SyncBackend;
  /** The deployment's shard count. */
  readonly shards: number;
  /** The shard a client's call of mutation `path` runs on (throws what the call would: unknown function, bad args). */
  /** The shard a mutation runs on (after the call's own checks; `internal`: an admin's call). */
  readonly mutationShard: (path: string, args: Value, internal: boolean) => number;
  /** Whether this node writes `shard` now (its role is "writing": not acquiring, not handing over). */
  readonly writes: (shard: number) => boolean;
  /** Forwards to the writer of `shard`. */
  readonly forwarder: (shard: number) => WriteForwarder;
  /**
   * Whether this node is about to write `shard` (it is acquiring at startup, or the
   * manifest names it: a poisoned engine re-acquiring). Writes then wait for that rather
   * than go to a writer that is this node.
   */
  readonly becomingWriter: (shard: number) => boolean;
  /** Resolves true once this node writes `shard`, false after `timeoutMs`. */
  readonly awaitWriting: (shard: number, timeoutMs: number) => Promise<boolean>;
  /** Resolves true once commits through `ts` are applied here and announced to sessions. */
  readonly waitForTs: (ts: number, timeoutMs: number) => Promise<boolean>;
  /** The log of `shard` grew (a write this node forwarded committed): poll it now, or wait for the writer's hint that brings it. */
  readonly wakeTail: (shard: number) => void;
  readonly nodeId: string;
  readonly random: Random;
  readonly clock: Clock;
  /**
   * Longest wait for one forwarded try's answer: the writer's lease (plus the clock skew
   * takeovers tolerate). A writer silent that long is frozen or gone and loses the shard,
   * so the mutation is tried again (with its receipt key) where the shard is written then.
   */
  readonly forwardAttemptTimeoutMs: number;
  /** Whether `shard`'s manifest, as this node last read it, names a writer whose lease is live. */
  readonly writerLeaseLive: (shard: number) => boolean;
  /**
   * How long a forward goes on once the shard has no live lease: long enough for a
   * standby (or another writer) to see it and take the shard over. After that nobody is
   * coming, and the caller hears WRITER_UNAVAILABLE instead of waiting the whole bound.
   */
  readonly takeoverWaitMs: number;
  readonly visibleWaitMs?: number;
}

/**
 * The backend behind a node's sessions and HTTP API, whatever its role (DESIGN.md §9):
 * queries run on the local materialization; a mutation runs locally while the node writes
 * its shard (the lane of its shardBy value) and is forwarded to that shard's writer
 * otherwise; an action runs locally while the node writes every shard (its mutations may
 * go to any), else on shard 0's writer. A role change (a takeover, a demotion after a
 * fence) needs no restart: each call looks at the engines.
 *
 * Invariants:
 * - A forwarded mutation carries a receipt key (the client's, or one made here and named
 *   to the caller in any answer whose outcome is unknown), so it is applied at most once
 *   however often it is retried.
 * - Failover keeps it moving: a try abandoned because a newer epoch names another writer
 *   is re-routed at once; a try the writer does not answer within a lease is tried again;
 *   and once this node writes the shard itself (it took it over), the mutation runs here,
 *   under its receipt key. All of it within FORWARDED_MUTATION_TIMEOUT_MS, and only while
 *   a takeover may still come: once the shard has had no live lease for takeoverWaitMs,
 *   the forward gives up.
 * - A forwarded mutation is answered only once this node has applied its commit
 *   (read-your-writes): a session sees its own write in the next Transition, an HTTP
 *   caller in its next query here. If the tail does not get there in time, the answer is
 *   REPLICA_BEHIND with `committed: true` and the ts — never a failure of a durable write.
 * - A local commit that found the node fenced did not commit (FENCED is definite); with
 *   a receipt key it goes on to the new writer, otherwise its error is returned. One
 *   refused because the shard is being handed over (NOT_WRITER: never queued) goes on to
 *   the next writer with or without a key.
 */
export function nodeBackend(options: NodeBackendOptions): SyncBackend {
  const { local } = options;
  const forwardedClientId = `fwd-${options.nodeId}-${randomHex(options.random, 6)}`;
  let forwardedSeq = 0;
  const visibleWaitMs = options.visibleWaitMs ?? FORWARDED_WRITE_VISIBLE_WAIT_MS;
  const writing = (shard: number) => options.writes(shard);
  /** Writing `shard` now, or after waiting (bounded) for an acquire of this node's in progress. */
  const writesHere = async (shard: number) => writing(shard) || (options.becomingWriter(shard) && (await options.awaitWriting(shard, visibleWaitMs)));
  const writesEvery = async () => {
    for (let shard = 0; shard < options.shards; shard++) if (!(await writesHere(shard))) return false;
    return true;
  };

  const forwardMutation = async (shard: number, path: string, args: Value, callOptions: Parameters<SyncBackend["runMutation"]>[2]): Promise<MutationRun> => {
    const keyed = callOptions.clientId !== undefined && callOptions.seq !== undefined;
    // Refused here as the writer would refuse it: the key made below is not the caller's.
    if (!keyed && callOptions.ackedThrough !== undefined) throw new CairnError("INVALID_ARGUMENT", "ackedThrough is given only with clientId and seq");
    const receipt = keyed ? { clientId: callOptions.clientId!, seq: callOptions.seq! } : { clientId: forwardedClientId, seq: forwardedSeq++ };
    const acked = callOptions.ackedThrough !== undefined ? { ackedThrough: callOptions.ackedThrough } : {};
    const call = { path, args: encodeValue(args), identity: callOptions.identity, ...(callOptions.internal === true ? { internal: true } : {}), ...receipt, ...acked };
    const forwarder = options.forwarder(shard);
    const startedMs = options.clock.monotonicMs();
    const failures: RouteFailure[] = [];
    let leaselessSinceMs: number | null = null;
    for (let attempt = 1; ; attempt++) {
      // A takeover made this node the writer while it forwarded: the mutation runs here.
      if (attempt > 1 && (await writesHere(shard))) return namingKey(local.runMutation(path, args, { ...callOptions, ...receipt }), receipt);
      const outcome = await forwarder.attemptMutation(call, options.forwardAttemptTimeoutMs, attempt > 1 && failures.at(-1)?.rerouted !== true);
      if (outcome.kind === "answer") return visibleHere(shard, outcome.answer, receipt);
      if (outcome.kind === "error") throw outcome.error;
      failures.push(outcome.failure);
      const nowMs = options.clock.monotonicMs();
      leaselessSinceMs = options.writerLeaseLive(shard) ? null : (leaselessSinceMs ?? nowMs);
      const nobodyTookOver = leaselessSinceMs !== null && nowMs - leaselessSinceMs >= options.takeoverWaitMs;
      if (outcome.failure.final === true || nobodyTookOver || nowMs - startedMs >= FORWARDED_MUTATION_TIMEOUT_MS) throw forwardUnavailable("mutation", failures, receipt);
      // Re-routed by a newer epoch: at once. Else after a backoff, cut short by a route change.
      if (outcome.failure.rerouted !== true) await forwarder.routeChange(Math.min(FORWARD_RETRY_BACKOFF_MAX_MS, FORWARD_RETRY_BACKOFF_BASE_MS * 2 ** (attempt - 1)));
    }
  };

  /** The writer committed a forwarded mutation: answer once this node applied it too (read-your-writes). */
  const visibleHere = async (shard: number, answer: ForwardedAnswer, receipt: { readonly clientId: string; readonly seq: number }): Promise<MutationRun> => {
    const ts = answerTs(answer);
    options.wakeTail(shard);
    if (!(await options.waitForTs(ts, visibleWaitMs))) {
      throw new CairnError(
        "REPLICA_BEHIND",
        `the mutation committed at ts ${ts} on the writer, but this node has not applied the log that far within ${visibleWaitMs / 1000} s; ` +
          `it is durable: send it again with the same (clientId, seq) for its result`,
        { details: { committed: true, ts, clientId: receipt.clientId, seq: receipt.seq } },
      );
    }
    return { value: decodeValue(answer.value), ts, replayed: answer.replayed === true, attempts: 0, writeRanges: [] };
  };

  return {
    deploymentId: local.deploymentId,
    get readTs() {
      return local.readTs;
    },
    runQuery: (path, args, callOptions) => local.runQuery(path, args, callOptions),
    runMutation: async (path, args, callOptions) => {
      // With several shards the arguments are validated here to route the call (and again
      // where it runs); with one there is nothing to route. An admin's call is routed like
      // a client's (a dashboard's edit on a follower goes to the writer), as an admin's.
      const shard = options.shards === 1 ? 0 : options.mutationShard(path, args, callOptions.internal === true);
      if (!(await writesHere(shard))) return forwardMutation(shard, path, args, callOptions);
      try {
        return await local.runMutation(path, args, callOptions);
      } catch (error) {
        const keyed = callOptions.clientId !== undefined && callOptions.seq !== undefined;
        // NOT_WRITER: refused before it was queued (the shard is being handed over), so it surely did not run.
        const notRun = hasErrorCode(error, "NOT_WRITER") || (keyed && hasErrorCode(error, "FENCED"));
        if (notRun && !writing(shard)) return forwardMutation(shard, path, args, callOptions);
        throw error;
      }
    },
    runAction: async (path, args, callOptions) => {
      if (await writesEvery()) return local.runAction(path, args, callOptions);
      const answer = await options.forwarder(0).action({ path, args: encodeValue(args), identity: callOptions.identity, ...(callOptions.internal === true ? { internal: true } : {}) });
      return { value: decodeValue(answer.value) };
    },
    receipt: (clientId, seq, identity) => local.receipt(clientId, seq, identity),
  };
}

/**
 * A mutation run here under a receipt key the node may have made: an answer whose outcome
 * is unknown (ENGINE_POISONED) names the key, so that the caller can learn the result.
 */
async function namingKey(run: Promise<MutationRun>, receipt: { readonly clientId: string; readonly seq: number }): Promise<MutationRun> {
  try {
    return await run;
  } catch (error) {
    if (!hasErrorCode(error, "ENGINE_POISONED")) throw error;
    const { clientId, seq } = receipt;
    throw new CairnError(
      "ENGINE_POISONED",
      `${(error as Error).message}; whether the mutation committed is unknown: send it again with clientId ${JSON.stringify(clientId)} and seq ${seq} to learn its result without running it twice`,
      { cause: error, details: { ...(error as CairnError).details, outcomeUnknown: true, clientId, seq } },
    );
  }
}

function answerTs(answer: ForwardedAnswer): number {
  if (typeof answer.ts !== "number" || !Number.isSafeInteger(answer.ts) || answer.ts < 0) {
    throw new CairnError("INTERNAL", "the writer's answer to a forwarded mutation carries no commit ts");
  }
  return answer.ts;
}
