import { assert } from "../base/index.js";
import type { SqliteDatabase } from "./schema.js";

/**
 * Where a shard's local copy stands in its log. Stored in the one-row `meta` table and
 * written in the same transaction as the data it describes, so after a crash the file
 * says exactly which segment to resume from.
 */
export interface LocalMeta {
  readonly shard: number;
  readonly deploymentId: string;
  /** Seqno of the last applied segment; -1 before anything was applied. */
  readonly appliedSeqno: number;
  /** Epoch of the last applied segment, 0 initially. */
  readonly epoch: number;
  /** Hash (hex) of the last applied segment: the link the next segment's prevHash must match. */
  readonly lastHash: string | null;
  /** Closed frontier: reads at ts <= frontierTs are complete. */
  readonly frontierTs: number;
  /** Reads below this ts fail: history was pruned or replaced by a restore. */
  readonly minReadableTs: number;
}

export type MetaUpdate = Partial<Pick<LocalMeta, "appliedSeqno" | "epoch" | "lastHash" | "frontierTs">>;

interface MetaRow {
  shard: number;
  deployment_id: string;
  applied_seqno: number;
  epoch: number;
  last_hash: string | null;
  frontier_ts: number;
  min_readable_ts: number;
}

const SELECT_META = `SELECT shard, deployment_id, applied_seqno, epoch, last_hash, frontier_ts, min_readable_ts
  FROM meta WHERE singleton = 0`;

export const UPDATE_META = `UPDATE meta SET applied_seqno = ?, epoch = ?, last_hash = ?, frontier_ts = ?,
  min_readable_ts = ? WHERE singleton = 0`;

export function readMeta(db: SqliteDatabase): LocalMeta {
  const row = db.prepare<[], MetaRow>(SELECT_META).get();
  assert(row !== undefined, "the schema check admitted a store without a meta row");
  return {
    shard: row.shard,
    deploymentId: row.deployment_id,
    appliedSeqno: row.applied_seqno,
    epoch: row.epoch,
    lastHash: row.last_hash,
    frontierTs: row.frontier_ts,
    minReadableTs: row.min_readable_ts,
  };
}

/** Parameters of UPDATE_META, in order. */
export function metaParameters(meta: LocalMeta): [number, number, string | null, number, number] {
  return [meta.appliedSeqno, meta.epoch, meta.lastHash, meta.frontierTs, meta.minReadableTs];
}
