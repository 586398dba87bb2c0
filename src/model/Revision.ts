import type { DocumentId } from "./DocumentId.js";

/**
 * The records a commit is made of. The same records flow through segments, the local
 * materialization, snapshots and the sync layer's change matching.
 *
 * Timestamps are hybrid-logical microseconds since the Unix epoch (DESIGN.md §5): plain
 * numbers, exact up to 2^53 µs (year 2255).
 */

/** One version of one document. */
export interface DocumentRevision {
  readonly tableNumber: number;
  readonly id: DocumentId;
  readonly ts: number;
  /** The document in Cairn's lossless JSON encoding (see model/Value); null = deleted. */
  readonly value: string | null;
  /** Timestamp of the revision this one replaces; null when the document is new. */
  readonly prevTs: number | null;
}

/** One change to one index: at `ts`, `key` points at `docId`, or (null) at nothing. */
export interface IndexUpdate {
  readonly indexId: number;
  /** Order-preserving encoded key (see model/IndexKey), ending in creation time and id. */
  readonly key: Uint8Array;
  readonly ts: number;
  readonly docId: DocumentId | null;
}

/**
 * The durable answer to a client's mutation `(clientId, seq)`, written in the same
 * segment as the mutation's writes so that a re-sent mutation is answered, never re-run.
 */
export interface ClientReceipt {
  readonly clientId: string;
  readonly seq: number;
  readonly ts: number;
  /** The mutation's return value or error, encoded as JSON text by the functions layer. */
  readonly result: string;
  /**
   * The route (ROUTE_BYTES bytes, model/shardFor) of the mutation's shardBy value, or
   * null for a mutation without shardBy (it runs on lane 0). A receipt lives on its
   * mutation's lane, `shardOfRoute(route, N)`; a reshard to another shard count moves it
   * to that lane of the new count, which it cannot work out from the receipt otherwise.
   */
  readonly route: Uint8Array | null;
  /**
   * Who wrote it (see functions/receiptOwner): only a call of the same identity is
   * answered from it, and no other identity's call runs under its key. Absent on
   * receipts written before receipts had owners: those answer any caller, as they did.
   */
  readonly owner?: string;
  /**
   * The client's floor when it sent the mutation: it had the results of every seq below
   * this one (its `ackedThrough` + 1). Receipts of the client and owner below it are
   * pruned, and a seq below it is refused, never run again. Absent or 0: no floor.
   */
  readonly floorSeq?: number;
}
