import type { DocumentId } from "../model/index.js";
import type { DocumentWrite } from "./WriteUnit.js";

/** Where a pending revision's ts will be: filled in when the writer stamps its unit (null until then). */
export interface PendingStamp {
  ts: number | null;
}

/** A document revision written by a unit the writer has queued or in flight: not durable yet. */
export interface PendingRevision {
  readonly id: DocumentId;
  /** The unit's place in the writer's queue (seqs increase in log order). */
  readonly seq: number;
  readonly tableNumber: number;
  /** Encoded document text; null: the unit deletes the document. */
  readonly value: string | null;
  readonly stamp: PendingStamp;
}

/**
 * The document revisions of a writer's queued and in-flight units, per document in queue
 * order: what a mutation reading the writer's pending state sees (early lock release,
 * DESIGN.md §4), and what its commit is checked against. A revision leaves once its unit
 * is acknowledged (then the local store has it) or failed.
 */
export class PendingDocuments {
  private readonly byId = new Map<DocumentId, PendingRevision[]>();
  /** Pending revisions per table: a scan of a table's documents waits while any is pending. */
  private readonly perTable = new Map<number, number>();

  /** Records the revisions of the unit `seq`; seqs must increase from call to call. */
  add(seq: number, documents: readonly DocumentWrite[]): PendingRevision[] {
    const revisions: PendingRevision[] = [];
    for (const write of documents) {
      const revision: PendingRevision = { id: write.id, seq, tableNumber: write.tableNumber, value: write.value, stamp: { ts: null } };
      const list = this.byId.get(write.id);
      if (list === undefined) this.byId.set(write.id, [revision]);
      else list.push(revision);
      this.perTable.set(write.tableNumber, (this.perTable.get(write.tableNumber) ?? 0) + 1);
      revisions.push(revision);
    }
    return revisions;
  }

  /** Forgets a unit's revisions (acknowledged or failed). */
  remove(revisions: readonly PendingRevision[]): void {
    for (const revision of revisions) {
      const list = this.byId.get(revision.id);
      if (list !== undefined) {
        // Units settle in queue order, so it is nearly always the first.
        const at = list[0] === revision ? 0 : list.indexOf(revision);
        if (at >= 0) list.splice(at, 1);
        if (list.length === 0) this.byId.delete(revision.id);
      }
      const count = (this.perTable.get(revision.tableNumber) ?? 1) - 1;
      if (count === 0) this.perTable.delete(revision.tableNumber);
      else this.perTable.set(revision.tableNumber, count);
    }
  }

  /** The newest pending revision of `id` among units up to seq `through`. */
  visible(id: DocumentId, through: number): PendingRevision | undefined {
    const list = this.byId.get(id);
    if (list === undefined) return undefined;
    for (let index = list.length - 1; index >= 0; index--) if (list[index]!.seq <= through) return list[index];
    return undefined;
  }

  /** Whether a unit after seq `through` writes `id`. */
  writtenAfter(id: DocumentId, through: number): boolean {
    const list = this.byId.get(id);
    return list !== undefined && list[list.length - 1]!.seq > through;
  }

  /** Whether any pending unit writes a document of `tableNumber`. */
  writesTable(tableNumber: number): boolean {
    return this.perTable.has(tableNumber);
  }

  get size(): number {
    return this.byId.size;
  }
}
