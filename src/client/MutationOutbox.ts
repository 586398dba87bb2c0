import { CairnError } from "../base/index.js";
import { OUTBOX_SAVE_RETRY_MS } from "./limits.js";
import { decodeOutboxRecord, encodeOutboxRecord, type OutboxRecord } from "./OutboxRecord.js";
import type { OutboxStore } from "./OutboxStore.js";
import type { Timers } from "./Timers.js";

/**
 * The client's side of its outbox store: it loads the record once and saves the newest
 * record the client hands it, one save at a time.
 *
 * Invariants:
 * - saves never overlap; a record handed in during a save replaces any other waiting
 *   one (only the newest matters), and `onSaved(record)` follows each save that landed,
 *   with the record it wrote (the client checks each mutation's seq and identity in it:
 *   a mutation whose identity changed during a save is not held as it is by that one);
 * - a failed save is reported once per run of failures and retried after
 *   OUTBOX_SAVE_RETRY_MS (or at the next record): nothing it holds is announced saved
 *   until then;
 * - an unreadable record is never sent nor overwritten unreported: it is quarantined by
 *   the store and reported (OUTBOX_INVALID with `keptAt`); if even that fails, the
 *   outbox is left alone and the client runs without it;
 * - after `close`, nothing is saved except what was handed in before it;
 * - `flushed` resolves once every record handed in before it was written (or found
 *   written already), and rejects if the outbox closes first.
 */

/** What loading found: the record to restore (null: empty), or that the client runs without an outbox. */
export type OutboxLoad = { readonly usable: true; readonly record: OutboxRecord | null } | { readonly usable: false };

/** A record handed in, numbered in the order of `save` calls. */
interface HandedIn {
  readonly record: OutboxRecord;
  readonly number: number;
}

export class MutationOutbox {
  private waiting: HandedIn | null = null;
  private handedIn = 0;
  /** The number of the latest record written (or found written already). */
  private written = 0;
  private flushWaiters: { readonly through: number; readonly resolve: () => void; readonly reject: (error: unknown) => void }[] = [];
  private saving = false;
  private savedText: string | null = null;
  private failing = false;
  private retryTimer: unknown = null;
  private closed = false;
  private idle: (() => void)[] = [];
  private loading: Promise<OutboxLoad> | null = null;

  constructor(
    private readonly store: OutboxStore,
    private readonly timers: Timers,
    private readonly report: (error: unknown) => void,
    private readonly onSaved: (saved: OutboxRecord) => void,
  ) {}

  /** Takes the store and reads its record (once); problems are reported, never thrown. */
  load(): Promise<OutboxLoad> {
    this.loading ??= this.open();
    return this.loading;
  }

  private async open(): Promise<OutboxLoad> {
    let text: string | null;
    try {
      text = await this.store.open();
    } catch (error) {
      this.report(error);
      return { usable: false };
    }
    if (text === null) return { usable: true, record: null };
    try {
      const record = decodeOutboxRecord(text, this.store.description);
      this.savedText = text;
      return { usable: true, record };
    } catch (invalid) {
      return this.quarantine(text, invalid as CairnError);
    }
  }

  /** Saves `record` once the saves before it are done (only the newest waiting one is saved). */
  save(record: OutboxRecord): void {
    if (this.closed) return;
    this.waiting = { record, number: ++this.handedIn };
    if (this.retryTimer !== null) {
      this.timers.clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    void this.drain();
  }

  /** Resolves once every record handed in so far is written; rejects (OUTBOX_UNAVAILABLE) if the outbox closes first. */
  flushed(): Promise<void> {
    if (this.written >= this.handedIn) return Promise.resolve();
    if (this.closed) return Promise.reject(notWrittenBeforeClose());
    return new Promise((resolve, reject) => this.flushWaiters.push({ through: this.handedIn, resolve, reject }));
  }

  /** Finishes the saves handed in so far (one attempt each), then releases the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer !== null) this.timers.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    // A store still opening is released once it is open, not before (it would stay taken).
    if (this.loading !== null) await this.loading;
    if (this.saving) await new Promise<void>((resolve) => this.idle.push(resolve));
    for (const waiter of this.flushWaiters.splice(0)) waiter.reject(notWrittenBeforeClose());
    try {
      await this.store.close();
    } catch (error) {
      this.report(error);
    }
  }

  private async drain(): Promise<void> {
    if (this.saving) return;
    this.saving = true;
    try {
      // `onSaved` drives the client: never call it from inside the client's own step that handed the record in.
      await Promise.resolve();
      while (this.waiting !== null) {
        const handed = this.waiting;
        const { record } = handed;
        this.waiting = null;
        // An outbox with nothing pending may be emptied: the next client starts a new id.
        const text = record.mutations.length === 0 ? null : encodeOutboxRecord(record);
        if (text !== this.savedText && !(await this.write(text, handed))) return;
        this.wrote(handed.number);
        this.onSaved(record);
      }
    } finally {
      this.saving = false;
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private wrote(number: number): void {
    this.written = number;
    const waiters = this.flushWaiters;
    this.flushWaiters = waiters.filter((waiter) => waiter.through > number);
    for (const waiter of waiters) if (waiter.through <= number) waiter.resolve();
  }

  /** One save; on failure the record waits again (unless a newer one came) and a retry is set. */
  private async write(text: string | null, handed: HandedIn): Promise<boolean> {
    try {
      await this.store.save(text);
      this.savedText = text;
      this.failing = false;
      return true;
    } catch (error) {
      if (!this.failing) this.report(error);
      this.failing = true;
      this.waiting ??= handed;
      if (!this.closed) this.retryTimer = this.timers.setTimeout(() => this.retry(), OUTBOX_SAVE_RETRY_MS);
      return false;
    }
  }

  private retry(): void {
    this.retryTimer = null;
    if (!this.closed) void this.drain();
  }

  private async quarantine(text: string, invalid: CairnError): Promise<OutboxLoad> {
    let keptAt: string;
    try {
      keptAt = await this.store.quarantine(text);
    } catch (error) {
      this.report(new CairnError("OUTBOX_INVALID", `${invalid.message}; it could not be kept aside either, so the client leaves it as it is and runs without an outbox`, {
        cause: error,
        details: invalid.details,
      }));
      return { usable: false };
    }
    this.report(new CairnError("OUTBOX_INVALID", `${invalid.message}; its content is kept at ${keptAt}, and the client starts a new outbox`, {
      cause: invalid,
      details: { ...invalid.details, keptAt },
    }));
    return { usable: true, record: null };
  }
}

function notWrittenBeforeClose(): CairnError {
  return new CairnError("OUTBOX_UNAVAILABLE", "the client closed before the outbox was written: what it was to drop or hold may come back after a reload");
}
