/**
 * Where a client's outbox lives (IndexedDB in browsers: `indexedDbOutbox`; a file in
 * Node: `fileOutbox` of client/node). The client reads and writes it as opaque text
 * (OutboxRecord holds the format and its checks).
 *
 * Contract, for every implementation:
 * - `open` is called once, before anything else. It takes the outbox for this client
 *   alone — another client (a tab, a process) holding it makes `open` fail with
 *   OUTBOX_LOCKED, never share it: two clients numbering mutations under one client id
 *   would have one's mutation answered with the other's receipt — and returns its text
 *   (null: empty).
 * - `save` replaces the whole text atomically (a reader sees the old text or the new,
 *   never a mix) and resolves only once the new text is durable; null empties the
 *   outbox. Saves are never concurrent: the client waits for one before the next.
 * - `quarantine` keeps `text` (unreadable content) somewhere it survives, empties the
 *   outbox, and returns where the text is now, for the report.
 * - `close` releases the outbox for the next client; the content stays.
 * - Failures are CairnErrors: OUTBOX_LOCKED, OUTBOX_UNAVAILABLE.
 */
export interface OutboxStore {
  /** The outbox in messages ("file /var/app/outbox", "IndexedDB chat, slot 3f2a…"). */
  readonly description: string;
  open(): Promise<string | null>;
  save(text: string | null): Promise<void>;
  quarantine(text: string): Promise<string>;
  close(): Promise<void>;
}
