import { afterEach } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SeededRandom } from "../../src/base/random.js";
import { type DocumentId, newDocumentId } from "../../src/model/DocumentId.js";
import { encodeIndexKey } from "../../src/model/IndexKey.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../../src/model/Revision.js";
import type { Value } from "../../src/model/Value.js";
import type { ApplyBatch, DumpChunk, DumpCursor, LocalStoreOptions, MetaUpdate } from "../../src/local/index.js";
import { LocalStore, type OverlayBudget } from "../../src/local/index.js";

/** Shared builders for the local store tests: temp dirs, ids, keys, batches. */

export const DEPLOYMENT = "dep-test";

/** A temp directory per test, removed with everything in it by `cleanup`. */
export class TempDirs {
  private readonly dirs: string[] = [];

  make(): string {
    const dir = mkdtempSync(join(tmpdir(), "cairn-local-"));
    this.dirs.push(dir);
    return dir;
  }

  file(name = "shard.sqlite"): string {
    return join(this.make(), name);
  }

  cleanup(): void {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** Tracks stores so every test closes what it opened, even when it fails. */
export class OpenStores {
  private readonly stores: LocalStore[] = [];

  open(path: string, shard = 0, deploymentId = DEPLOYMENT, fold: LocalStoreOptions["fold"] = {}, overlayBudget?: OverlayBudget): LocalStore {
    const store = LocalStore.open({ path, shard, deploymentId, fold, ...(overlayBudget === undefined ? {} : { overlayBudget }) });
    this.stores.push(store);
    return store;
  }

  closeAll(): void {
    for (const store of this.stores.splice(0)) store.close();
  }
}

export function ids(count: number, tableNumber = 1, seed = 1): DocumentId[] {
  const random = new SeededRandom(seed);
  return Array.from({ length: count }, () => newDocumentId(tableNumber, random));
}

export function key(...values: Value[]): Uint8Array {
  return encodeIndexKey(values);
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

export function revision(id: DocumentId, ts: number, value: string | null, prevTs: number | null = null, tableNumber = 1): DocumentRevision {
  return { tableNumber, id, ts, value, prevTs };
}

export function entry(indexId: number, keyBytes: Uint8Array, ts: number, docId: DocumentId | null): IndexUpdate {
  return { indexId, key: keyBytes, ts, docId };
}

export function receipt(clientId: string, seq: number, ts: number, result = '{"ok":true}', route: Uint8Array | null = null): ClientReceipt {
  return { clientId, seq, ts, result, route };
}

export function batch(parts: Partial<ApplyBatch> & { meta?: MetaUpdate }): ApplyBatch {
  return { revisions: parts.revisions ?? [], indexUpdates: parts.indexUpdates ?? [], receipts: parts.receipts ?? [], meta: parts.meta ?? {} };
}

/** The error a call throws (fails the test if it does not throw). */
/** Every chunk of a dump, the cursor closed after. */
export function drainDump(cursor: DumpCursor): DumpChunk[] {
  const chunks: DumpChunk[] = [];
  try {
    for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) chunks.push(chunk);
  } finally {
    cursor.close();
  }
  return chunks;
}

export function thrown(call: () => unknown): { code?: string; kind?: string; message: string } {
  try {
    call();
  } catch (error) {
    return error as { code?: string; kind?: string; message: string };
  }
  throw new Error("expected the call to throw");
}

export async function rejected(promise: Promise<unknown>): Promise<{ code?: string; kind?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; kind?: string; message: string };
  }
  throw new Error("expected the promise to reject");
}

/** Temp directories and open stores for one test file, cleaned up after every test. */
export function localFixtures(): { readonly dirs: TempDirs; readonly stores: OpenStores } {
  const dirs = new TempDirs();
  const stores = new OpenStores();
  afterEach(() => {
    stores.closeAll();
    dirs.cleanup();
  });
  return { dirs, stores };
}
