import { z } from "zod";
import { CairnError, hasErrorCode, type Random } from "../base/index.js";
import { NODE_ID_PATTERN } from "../model/index.js";
import { bucketLayout, CasObject, jsonCasCodec } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * Replicas publish how far they have applied each shard's log, so that the owner's GC
 * keeps the segments they still need. A watermark not updated for the TTL stops holding
 * GC back: that replica restores from the snapshot when it returns.
 *
 * Invariants:
 * - `publish` writes only a valid watermark (an integer appliedSeqno >= -1, an integer
 *   updatedAt); anything else is INVALID_ARGUMENT and writes nothing.
 * - A watermark that cannot be parsed (written by hand, by a buggy or foreign node) is
 *   reported by `readAll` and otherwise ignored: it neither holds GC back nor stops it.
 */
const watermarkSchema = z.object({
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  consumerId: z.string().min(1),
  appliedSeqno: z.number().int().min(-1),
  /** Milliseconds since the Unix epoch. */
  updatedAt: z.number().int().min(0),
});

export type ConsumerWatermark = z.infer<typeof watermarkSchema>;

const watermarkCodec = jsonCasCodec(watermarkSchema, "WATERMARK_INVALID", "consumer watermark");

/** A silent consumer stops holding GC back after 24 h: a day of log is cheap, forever is not. */
export const CONSUMER_TTL_MS_DEFAULT = 24 * 60 * 60 * 1000;

/** A watermark `readAll` could not use, and why. */
export interface MalformedWatermark {
  readonly consumerId: string;
  readonly reason: string;
}

export interface WatermarkScan {
  readonly watermarks: readonly ConsumerWatermark[];
  readonly malformed: readonly MalformedWatermark[];
}

export class ConsumerWatermarks {
  constructor(
    private readonly store: ObjectStore,
    private readonly shard: number,
    private readonly random: Random,
  ) {}

  async publish(consumerId: string, appliedSeqno: number, nowMs: number): Promise<void> {
    const object = this.object(consumerId);
    if (!Number.isSafeInteger(appliedSeqno) || appliedSeqno < -1) {
      throw new CairnError("INVALID_ARGUMENT", `appliedSeqno must be an integer >= -1, got ${String(appliedSeqno)}`);
    }
    if (!Number.isSafeInteger(nowMs) || nowMs < 0) {
      throw new CairnError("INVALID_ARGUMENT", `a watermark's time must be integer milliseconds >= 0, got ${String(nowMs)}`);
    }
    await object.update((current) =>
      current !== null && current.appliedSeqno === appliedSeqno && current.updatedAt === nowMs
        ? null
        : { consumerId, appliedSeqno, updatedAt: nowMs },
    );
  }

  async read(consumerId: string): Promise<ConsumerWatermark | null> {
    return (await this.object(consumerId).read())?.value ?? null;
  }

  async remove(consumerId: string): Promise<void> {
    await this.store.delete(this.object(consumerId).key);
  }

  /**
   * Every consumer's watermark (one LIST plus a GET each: off the hot path, on GC
   * cadence), and the ones that could not be used.
   */
  async readAll(): Promise<WatermarkScan> {
    const watermarks: ConsumerWatermark[] = [];
    const malformed: MalformedWatermark[] = [];
    const prefix = bucketLayout.consumersPrefix(this.shard);
    for await (const entry of this.store.list(prefix)) {
      const consumerId = entry.key.slice(prefix.length);
      if (!NODE_ID_PATTERN.test(consumerId)) {
        malformed.push({ consumerId, reason: `the key does not name a consumer (ids match ${NODE_ID_PATTERN})` });
        continue;
      }
      try {
        const watermark = await this.read(consumerId);
        if (watermark !== null && watermark.consumerId !== consumerId) {
          malformed.push({ consumerId, reason: `the watermark names consumer ${watermark.consumerId}` });
        } else if (watermark !== null) {
          watermarks.push(watermark);
        }
      } catch (error) {
        if (!hasErrorCode(error, "WATERMARK_INVALID")) throw error;
        malformed.push({ consumerId, reason: (error as Error).message });
      }
    }
    return { watermarks, malformed };
  }

  private object(consumerId: string): CasObject<ConsumerWatermark> {
    // A consumer is a node that follows the log: its id is that node's id.
    if (!NODE_ID_PATTERN.test(consumerId)) {
      throw new CairnError("INVALID_ARGUMENT", `consumer id must match ${NODE_ID_PATTERN}, got ${JSON.stringify(consumerId)}`);
    }
    return new CasObject(this.store, bucketLayout.consumer(this.shard, consumerId), watermarkCodec, this.random);
  }
}

/**
 * The lowest seqno live consumers still need, or null when no live consumer exists. A
 * watermark is live while updated within the TTL; one dated further than the TTL into the
 * future (a clock far off, or a forged value) would hold GC back forever and is not.
 */
export function lowestNeededSeqno(watermarks: readonly ConsumerWatermark[], nowMs: number, ttlMs: number): number | null {
  const live = watermarks.filter((watermark) => Math.abs(nowMs - watermark.updatedAt) <= ttlMs);
  if (live.length === 0) return null;
  return Math.min(...live.map((watermark) => watermark.appliedSeqno + 1));
}
