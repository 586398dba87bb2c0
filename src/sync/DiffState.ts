import { SYNC_DIFF_CHANGES_MAX } from "../base/index.js";
import type { DiffableResult, DiffRow, RowChange } from "../functions/index.js";
import type { DocumentRevision, KeyRange } from "../model/index.js";
import { orderedKeyText } from "./orderedKeyText.js";
import { addRow, checksumOf, emptySums, pageEnvelopeText, type RowSums } from "./resultChecksum.js";

/** One commit window applied to a state: the state after it and what the sessions send. */
export interface DiffStep {
  readonly next: DiffState;
  readonly changes: readonly RowChange[];
  /**
   * The QueryDiff's fields after its queryId (`"changes":[…],…,"checksum":"…"`), made once
   * for every session holding the state; null when the result did not change.
   */
  readonly bodyText: string | null;
}

/** Per row: what its object, key array and id cost beyond their contents (an estimate). */
const ROW_OVERHEAD_BYTES = 160;

/** Steps a state remembers (one per ts sessions advanced it to; almost always one). */
const STEPS_KEPT = 4;

/**
 * A diffable subscription result as the sessions share it (issue 30): the functions
 * layer's DiffableResult at a ts, with the checksum its client checks. Immutable; a
 * commit makes the next state, and every session holding this one (same query, args and
 * identity, at the same ts) gets the same next state and the same frame text from
 * `advance`, computed once.
 */
export class DiffState {
  /**
   * Steps taken from this state, by ts. The next state is held weakly: a state that a
   * long-lived holder keeps (a shared run's cache entry, a resume registration) must not
   * keep every later state, and every row that ever passed through the result, alive
   * through a chain of steps. A step whose next state was collected is computed again.
   */
  private readonly steps = new Map<number, { readonly next: WeakRef<DiffState>; readonly changes: readonly RowChange[]; readonly bodyText: string | null } | null>();
  private rowsFieldText: string | null = null;
  private heapBytes = 0;

  private constructor(
    readonly result: DiffableResult,
    /** The ts the result is the query's result at. */
    readonly ts: number,
    private readonly sums: RowSums,
    readonly checksum: string,
  ) {}

  static of(result: DiffableResult, ts: number): DiffState {
    const sums = emptySums();
    for (const row of result.rows) addRow(sums, orderedKeyText(row.key), row.text, 1);
    return new DiffState(result, ts, sums, checksumOf(sums, envelopeText(result)));
  }

  /** The result's JSON text (the QueryUpdated value). */
  valueText(): string {
    return this.result.valueText();
  }

  /** The QueryUpdated `rows` field: shape, order and each row's order key (made once per state). */
  rowsField(): string {
    this.rowsFieldText ??= `{"shape":"${this.result.shape}","order":"${this.result.order}","keys":${JSON.stringify(this.result.rows.map((row) => orderedKeyText(row.key)))}}`;
    return this.rowsFieldText;
  }

  readRanges(): KeyRange[] {
    return this.result.readRanges();
  }

  /** Heap its rows hold, estimated (UTF-16 texts, key bytes, per-row overhead). */
  get bytes(): number {
    if (this.heapBytes === 0) {
      this.heapBytes = ROW_OVERHEAD_BYTES;
      for (const row of this.result.rows) this.heapBytes += ROW_OVERHEAD_BYTES + 2 * (row.text.length + row.id.length) + row.key.byteLength;
    }
    return this.heapBytes;
  }

  /**
   * The state at `ts` after the commits in (this.ts, ts], whose revisions `revisions`
   * gives (null: no longer known); null when they are not known, the rows alone cannot
   * tell, or the diff would be larger than sending the result: the query runs again.
   * Remembered per ts, so sessions at this state share one answer, and the revisions are
   * asked for only by the first.
   */
  advance(ts: number, revisions: () => readonly DocumentRevision[] | null): DiffStep | null {
    if (ts === this.ts) return { next: this, changes: [], bodyText: null };
    const known = this.steps.get(ts);
    if (known === null) return null;
    const next = known?.next.deref();
    if (known !== undefined && next !== undefined) return { next, changes: known.changes, bodyText: known.bodyText };
    const step = this.computeStep(ts, revisions);
    if (this.steps.size >= STEPS_KEPT) this.steps.delete(this.steps.keys().next().value!);
    this.steps.set(ts, step === null ? null : { next: new WeakRef(step.next), changes: step.changes, bodyText: step.bodyText });
    return step;
  }

  private computeStep(ts: number, revisions: () => readonly DocumentRevision[] | null): DiffStep | null {
    const written = revisions();
    const moved = written === null ? null : this.result.advance(written);
    if (moved === null || moved.changes.length > SYNC_DIFF_CHANGES_MAX) return null;
    const { next: result, changes } = moved;
    const sums = { ...this.sums };
    const parts: string[] = [];
    for (const change of changes) {
      if (change.op !== "add") addRow(sums, keyOf(change.before), change.before.text, -1);
      if (change.op !== "remove") addRow(sums, keyOf(change.after), change.after.text, 1);
      parts.push(
        change.op === "remove"
          ? `{"op":"remove","key":"${keyOf(change.before)}"}`
          : `{"op":"${change.op}","key":"${keyOf(change.after)}","value":${change.after.text}}`,
      );
    }
    const envelope = envelopeText(result);
    const next = new DiffState(result, ts, sums, checksumOf(sums, envelope));
    if (changes.length === 0 && envelope === envelopeText(this.result)) return { next, changes, bodyText: null };
    const page = result.envelope === null ? "" : `"page":${envelope},`;
    return { next, changes, bodyText: `"changes":[${parts.join(",")}],${page}"checksum":"${next.checksum}"` };
  }
}

function keyOf(row: DiffRow): string {
  return orderedKeyText(row.key);
}

function envelopeText(result: DiffableResult): string {
  return result.envelope === null ? "" : pageEnvelopeText(result.envelope.isDone, result.envelope.continueCursor);
}
