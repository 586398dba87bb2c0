/**
 * The subset of the browser's IndexedDB and Web Locks APIs the IndexedDB outbox calls,
 * typed here because src/ compiles without the DOM library (it also runs in Node).
 */

export interface IdbRequest<T> {
  readonly result: T;
  readonly error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}

export interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: (() => void) | null;
  onblocked: (() => void) | null;
}

export interface IdbFactory {
  open(name: string, version: number): IdbOpenRequest;
}

export interface IdbDatabase {
  readonly objectStoreNames: { contains(name: string): boolean };
  createObjectStore(name: string, options?: { autoIncrement?: boolean }): unknown;
  transaction(stores: string | string[], mode: "readonly" | "readwrite", options?: { durability?: "strict" | "relaxed" | "default" }): IdbTransaction;
  close(): void;
}

export interface IdbTransaction {
  objectStore(name: string): IdbObjectStore;
  readonly error: unknown;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}

export interface IdbObjectStore {
  get(key: string): IdbRequest<unknown>;
  getAllKeys(): IdbRequest<unknown[]>;
  put(value: unknown, key: string): IdbRequest<unknown>;
  add(value: unknown): IdbRequest<unknown>;
  delete(key: string): IdbRequest<undefined>;
}

export interface WebLock {
  readonly name: string;
}

export interface WebLockManager {
  request(name: string, options: { ifAvailable: boolean }, callback: (lock: WebLock | null) => Promise<void> | void): Promise<unknown>;
}
