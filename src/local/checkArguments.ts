import { CairnError, invalidArgument } from "../base/index.js";
import type { LocalMeta, MetaUpdate } from "./LocalMeta.js";

/**
 * Checks on the arguments of LocalStore calls. A bad argument is a caller bug with a
 * clear INVALID_ARGUMENT; a read below the readable floor is LOCAL_HISTORY_UNAVAILABLE.
 */

export function checkReadTs(ts: number, meta: LocalMeta): void {
  if (!Number.isSafeInteger(ts) || ts < 0) throw invalidArgument(`read ts must be a non-negative integer, not ${String(ts)}`, { ts });
  if (ts < meta.minReadableTs) {
    throw new CairnError(
      "LOCAL_HISTORY_UNAVAILABLE",
      `shard ${meta.shard} cannot read at ts ${ts}: this node's local history of it starts at ts ${meta.minReadableTs} ` +
        `(${new Date(Math.floor(meta.minReadableTs / 1000)).toISOString()}; older revisions are pruned after historyRetentionMs, and none are kept below a restored snapshot); ` +
        `an older state of the deployment is rebuilt from the bucket by \`cairn restore\``,
      { details: { ts, minReadableTs: meta.minReadableTs } },
    );
  }
}

/**
 * `changes(afterTs, …)` is complete only if nothing after `afterTs` was pruned. While the
 * floor is 0 nothing ever was, and -1 asks for everything, including rows at ts 0.
 */
export function checkChangesWindow(afterTs: number, throughTs: number, limit: number, meta: LocalMeta): void {
  if (!Number.isSafeInteger(afterTs) || afterTs < -1) throw invalidArgument(`afterTs must be an integer >= -1, not ${String(afterTs)}`);
  if (!Number.isSafeInteger(throughTs) || throughTs < 0) {
    throw invalidArgument(`throughTs must be a non-negative integer, not ${String(throughTs)}`);
  }
  checkLimit(limit);
  if (afterTs < meta.minReadableTs && meta.minReadableTs > 0) {
    throw new CairnError(
      "LOCAL_HISTORY_UNAVAILABLE",
      `shard ${meta.shard} cannot list changes after ts ${afterTs}: history below ${meta.minReadableTs} was pruned or replaced by a restore`,
      { details: { afterTs, minReadableTs: meta.minReadableTs } },
    );
  }
}

export function checkDocumentId(id: unknown): void {
  if (typeof id !== "string") throw invalidArgument(`a document id must be a string, not ${typeof id}`);
}

export function checkIndexId(indexId: number): void {
  if (!Number.isSafeInteger(indexId) || indexId < 0) throw invalidArgument(`indexId must be a non-negative integer, not ${String(indexId)}`);
}

export function checkRange(range: { readonly start: Uint8Array; readonly end: Uint8Array | null }): void {
  if (typeof range !== "object" || range === null || !(range.start instanceof Uint8Array)) {
    throw new CairnError("KEY_RANGE_INVALID", "an index range needs a Uint8Array start");
  }
  if (range.end !== null && !(range.end instanceof Uint8Array)) {
    throw new CairnError("KEY_RANGE_INVALID", "an index range end must be a Uint8Array or null (unbounded)");
  }
}

export function checkOrder(order: string): void {
  if (order !== "asc" && order !== "desc") throw invalidArgument(`order must be "asc" or "desc", not ${JSON.stringify(order)}`);
}

export function checkLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 0) throw invalidArgument(`limit must be a non-negative integer, not ${String(limit)}`);
}

export function checkReceiptKey(clientId: string, seq: number): void {
  if (typeof clientId !== "string") throw invalidArgument("clientId must be a string");
  if (!Number.isSafeInteger(seq) || seq < 0) throw invalidArgument(`seq must be a non-negative integer, not ${String(seq)}`);
}

/** A floor holder is kept at least as long as any receipt: its bound is at or below the receipts'. */
export function checkFloorsBelowTs(floorsBelowTs: number, receiptsBelowTs: number): void {
  checkPruneTs(floorsBelowTs);
  if (floorsBelowTs > receiptsBelowTs) {
    throw invalidArgument(`floorsBelowTs ${floorsBelowTs} must not be above receiptsBelowTs ${receiptsBelowTs}: a client's floor outlives its receipts`);
  }
}

export function checkPruneTs(belowTs: number): void {
  if (!Number.isSafeInteger(belowTs) || belowTs < 0) {
    throw invalidArgument(`belowTs must be a non-negative integer, not ${String(belowTs)}`);
  }
}

/** The meta after `update`; LOCAL_APPLY_INVALID for a bad field or an appliedSeqno going backwards. */
export function mergeMetaUpdate(current: LocalMeta, update: MetaUpdate): LocalMeta {
  if (typeof update !== "object" || update === null) throw applyInvalid("batch meta must be an object");
  const next: LocalMeta = {
    ...current,
    ...(update.appliedSeqno === undefined ? {} : { appliedSeqno: update.appliedSeqno }),
    ...(update.epoch === undefined ? {} : { epoch: update.epoch }),
    ...(update.lastHash === undefined ? {} : { lastHash: update.lastHash }),
    ...(update.frontierTs === undefined ? {} : { frontierTs: update.frontierTs }),
  };
  if (!Number.isSafeInteger(next.appliedSeqno) || next.appliedSeqno < -1) throw applyInvalid("meta appliedSeqno must be an integer >= -1");
  if (next.appliedSeqno < current.appliedSeqno) {
    throw applyInvalid(`meta appliedSeqno ${next.appliedSeqno} goes backwards from ${current.appliedSeqno}`);
  }
  if (!Number.isSafeInteger(next.epoch) || next.epoch < 0) throw applyInvalid("meta epoch must be a non-negative integer");
  if (next.lastHash !== null && (typeof next.lastHash !== "string" || next.lastHash.length === 0)) {
    throw applyInvalid("meta lastHash must be a non-empty string or null");
  }
  if (!Number.isSafeInteger(next.frontierTs) || next.frontierTs < 0) throw applyInvalid("meta frontierTs must be a non-negative integer");
  return next;
}

function applyInvalid(message: string): CairnError {
  return new CairnError("LOCAL_APPLY_INVALID", message);
}
