import { CairnError } from "../base/index.js";
import type { IdbDatabase, IdbFactory, IdbRequest, IdbTransaction, WebLockManager } from "./browserStorageTypes.js";
import type { OutboxStore } from "./OutboxStore.js";
import { cryptoRandom, randomHex, type Random } from "./Random.js";

/**
 * Client outboxes in a browser's IndexedDB: one database (`databaseName`) holds a slot
 * per client, so every tab has its own outbox, and a tab that opens adopts a slot no
 * live tab holds (one left by a closed or crashed tab: its mutations go out under its
 * client id, and are applied once).
 *
 * Invariants:
 * - a slot is used by one tab at a time: the tab holds the Web Lock named after it
 *   (`navigator.locks`) for as long as it uses it, and adopts a slot only if that lock
 *   is free. Browsers without Web Locks get OUTBOX_UNAVAILABLE: two tabs numbering
 *   mutations under one client id would lose one's mutations to the other's receipts;
 * - each save is one readwrite transaction with strict durability, resolved once it
 *   completes: the slot holds the old text or the new;
 * - unreadable text moves to the `quarantined` store, in the same transaction that
 *   empties its slot.
 *
 * A tab adopts one slot: if several closed tabs left mutations, the next ones opened
 * adopt the rest.
 */

export interface IndexedDbOutboxOptions {
  /** A new slot's name. Default: `globalThis.crypto.getRandomValues`. */
  readonly random?: Random;
  /** Default: `globalThis.indexedDB`. */
  readonly indexedDB?: unknown;
  /** Default: `globalThis.navigator.locks`. */
  readonly locks?: unknown;
}

const SLOTS = "outboxes";
const QUARANTINED = "quarantined";
const DATABASE_VERSION = 1;
/** Bytes of a new slot's name: 128 bits, so two tabs never draw the same. */
const SLOT_NAME_BYTES = 16;

export function indexedDbOutbox(databaseName = "cairn-outbox", options: IndexedDbOutboxOptions = {}): OutboxStore {
  return new IndexedDbOutbox(databaseName, options);
}

class IndexedDbOutbox implements OutboxStore {
  private database: IdbDatabase | null = null;
  private slot: string | null = null;
  private releaseLock: (() => void) | null = null;

  constructor(
    private readonly databaseName: string,
    private readonly options: IndexedDbOutboxOptions,
  ) {}

  get description(): string {
    return `IndexedDB ${this.databaseName}${this.slot === null ? "" : `, slot ${this.slot}`}`;
  }

  async open(): Promise<string | null> {
    const factory = (this.options.indexedDB ?? (globalThis as { indexedDB?: unknown }).indexedDB) as IdbFactory | undefined;
    const locks = (this.options.locks ?? (globalThis as { navigator?: { locks?: unknown } }).navigator?.locks) as WebLockManager | undefined;
    if (factory === undefined) throw unavailable("this platform has no IndexedDB");
    if (locks === undefined) throw unavailable("this browser has no Web Locks (navigator.locks, which needs a secure context): tabs could not keep their outboxes apart");
    const database = await this.openDatabase(factory);
    this.database = database;
    const slots = await done(database.transaction(SLOTS, "readonly").objectStore(SLOTS).getAllKeys(), "list the outboxes");
    for (const slot of slots) {
      if (typeof slot !== "string" || !(await this.lock(locks, slot))) continue;
      const text = await done(database.transaction(SLOTS, "readonly").objectStore(SLOTS).get(slot), "read the outbox");
      // Emptied by its last tab between the listing and the lock: a fresh slot, under its name.
      return typeof text === "string" ? text : null;
    }
    const fresh = randomHex(this.options.random ?? cryptoRandom, SLOT_NAME_BYTES);
    if (!(await this.lock(locks, fresh))) throw new CairnError("OUTBOX_LOCKED", `the new outbox slot ${fresh} of ${this.databaseName} is held by another tab`);
    return null;
  }

  async save(text: string | null): Promise<void> {
    const { database, slot } = this.opened();
    const transaction = database.transaction(SLOTS, "readwrite", { durability: "strict" });
    const store = transaction.objectStore(SLOTS);
    if (text === null) store.delete(slot);
    else store.put(text, slot);
    await committed(transaction, `write ${this.description}`);
  }

  async quarantine(text: string): Promise<string> {
    const { database, slot } = this.opened();
    const transaction = database.transaction([SLOTS, QUARANTINED], "readwrite", { durability: "strict" });
    const added = transaction.objectStore(QUARANTINED).add({ slot, text });
    transaction.objectStore(SLOTS).delete(slot);
    await committed(transaction, `keep ${this.description} aside`);
    return `IndexedDB ${this.databaseName}, store ${QUARANTINED}, key ${String(added.result)}`;
  }

  async close(): Promise<void> {
    this.releaseLock?.();
    this.releaseLock = null;
    this.database?.close();
    this.database = null;
  }

  private opened(): { database: IdbDatabase; slot: string } {
    if (this.database === null || this.slot === null) throw unavailable(`use ${this.description}: it is not open`);
    return { database: this.database, slot: this.slot };
  }

  /** Takes the slot's lock if it is free, holding it until `close`; whether it was free. */
  private lock(locks: WebLockManager, slot: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      locks
        .request(`cairn-outbox/${this.databaseName}/${slot}`, { ifAvailable: true }, (lock) => {
          if (lock === null) return resolve(false);
          this.slot = slot;
          resolve(true);
          return new Promise<void>((release) => (this.releaseLock = release));
        })
        .catch((error: unknown) => reject(unavailable(`take the lock of outbox slot ${slot}`, error)));
    });
  }

  private openDatabase(factory: IdbFactory): Promise<IdbDatabase> {
    return new Promise((resolve, reject) => {
      const request = factory.open(this.databaseName, DATABASE_VERSION);
      request.onupgradeneeded = () => {
        const database = request.result;
        if (!database.objectStoreNames.contains(SLOTS)) database.createObjectStore(SLOTS);
        if (!database.objectStoreNames.contains(QUARANTINED)) database.createObjectStore(QUARANTINED, { autoIncrement: true });
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(unavailable(`open the IndexedDB database ${this.databaseName}`, request.error));
      request.onblocked = () => reject(unavailable(`open the IndexedDB database ${this.databaseName}: another tab holds an older version open`));
    });
  }
}

function done<T>(request: IdbRequest<T>, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(unavailable(what, request.error));
  });
}

function committed(transaction: IdbTransaction, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(unavailable(what, transaction.error));
    transaction.onabort = () => reject(unavailable(what, transaction.error ?? "the transaction was aborted"));
  });
}

function unavailable(what: string, cause?: unknown): CairnError {
  const why = cause === undefined ? "" : `: ${cause instanceof Error ? cause.message : String(cause)}`;
  return new CairnError("OUTBOX_UNAVAILABLE", `could not ${what}${why}`, cause === undefined ? {} : { cause });
}
