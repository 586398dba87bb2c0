import { CairnError, invalidArgument, type Clock, type Random } from "../base/index.js";
import { ConsumerWatermarks } from "../gc/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * How far each follower of each shard has applied its log, from the consumer watermarks
 * in the bucket (docs/admin-api.md `Deployment.shards[].followers`), read for the
 * dashboard off the hot path.
 *
 * Invariants:
 * - The bucket is read at most once per `refreshMs` (30 s): reads start no more often,
 *   however often the dashboard asks; a read in flight is shared by every caller.
 * - A shard whose read failed keeps its last good followers (`readAt` says how old they
 *   are) and reports the error until a later read of it succeeds; a failed read also
 *   waits out `refreshMs`, so a failing bucket is not asked on every request.
 * - `read` never rejects.
 * - Watermarks that cannot be parsed are left out (ConsumerWatermarks.readAll reports
 *   them; GC ignores them too).
 */
export interface FollowerWatermark {
  readonly consumerId: string;
  readonly appliedSeqno: number;
  /** Ms since the epoch, by the follower's clock. */
  readonly updatedAt: number;
}

export interface ShardFollowers {
  readonly shard: number;
  /** By consumer id. */
  readonly followers: readonly FollowerWatermark[];
  /** When `followers` were read (ms since the epoch), or null before a read of this shard succeeded. */
  readonly readAt: number | null;
  /** Why the last read of this shard failed, or null if it succeeded. */
  readonly error: string | null;
}

/**
 * One read per 30 s is a LIST plus a GET per follower per shard: with 2 followers and 4
 * shards, 12 requests, ~1,440 an hour while a dashboard stays open (~$0.002 an hour).
 */
export const FOLLOWER_WATERMARKS_REFRESH_MS_DEFAULT = 30_000;

/** Shards read at once: a deployment of many shards must not open as many LISTs in one burst. */
const SHARDS_READ_AT_ONCE_MAX = 8;

export interface FollowerWatermarksOptions {
  readonly store: ObjectStore;
  readonly random: Random;
  readonly clock: Clock;
  readonly numShards: number;
  readonly refreshMs?: number;
}

export interface FollowerWatermarksReader {
  /** Every shard's followers, read from the bucket if the last read is older than `refreshMs`. */
  read(): Promise<readonly ShardFollowers[]>;
}

export function followerWatermarks(options: FollowerWatermarksOptions): FollowerWatermarksReader {
  const { store, random, clock, numShards } = options;
  const refreshMs = options.refreshMs ?? FOLLOWER_WATERMARKS_REFRESH_MS_DEFAULT;
  if (!Number.isSafeInteger(numShards) || numShards < 1) throw invalidArgument(`numShards must be a positive integer, got ${String(numShards)}`);
  if (!Number.isFinite(refreshMs) || refreshMs < 0) throw invalidArgument(`refreshMs must be >= 0, got ${String(refreshMs)}`);
  let answer: readonly ShardFollowers[] = Array.from({ length: numShards }, (_, shard) => ({ shard, followers: [], readAt: null, error: null }));
  let lastReadStartedMs: number | null = null;
  let inFlight: Promise<readonly ShardFollowers[]> | null = null;

  const readShard = async (previous: ShardFollowers): Promise<ShardFollowers> => {
    try {
      const scan = await new ConsumerWatermarks(store, previous.shard, random).readAll();
      const followers = scan.watermarks
        .map(({ consumerId, appliedSeqno, updatedAt }) => ({ consumerId, appliedSeqno, updatedAt }))
        .sort((a, b) => (a.consumerId < b.consumerId ? -1 : a.consumerId > b.consumerId ? 1 : 0));
      return { shard: previous.shard, followers, readAt: clock.nowMs(), error: null };
    } catch (error) {
      return { ...previous, error: describe(error) };
    }
  };

  const readAll = async (): Promise<readonly ShardFollowers[]> => {
    const next = [...answer];
    let cursor = 0;
    const worker = async () => {
      for (let shard = cursor++; shard < numShards; shard = cursor++) next[shard] = await readShard(answer[shard]!);
    };
    await Promise.all(Array.from({ length: Math.min(SHARDS_READ_AT_ONCE_MAX, numShards) }, worker));
    answer = next;
    return answer;
  };

  return {
    read() {
      if (inFlight !== null) return inFlight;
      const nowMs = clock.monotonicMs();
      if (lastReadStartedMs !== null && nowMs - lastReadStartedMs < refreshMs) return Promise.resolve(answer);
      lastReadStartedMs = nowMs;
      inFlight = readAll().finally(() => {
        inFlight = null;
      });
      return inFlight;
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof CairnError) return `[${error.code}] ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
