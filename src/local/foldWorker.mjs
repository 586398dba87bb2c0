// The fold: writes a batch of overlay rows into a store's SQLite file in one transaction
// (DESIGN.md §6). Plain JavaScript so that it runs as a worker thread under every way
// Cairn is started (tsx, vitest, plain node) without a TypeScript loader in the worker;
// its types are in foldWorker.d.mts, its SQL comes from the caller (statements.ts), so
// the schema is known in one place.
//
// As a worker (workerData.cairnFold set): opens the file with the given pragmas, then
// answers each message { id, job } with { id } once the transaction committed, or
// { id, error } once it rolled back. The main thread sends one job at a time. To close,
// the main thread raises signals[ABORT] (a fold in flight then rolls back within a few
// hundred rows), sends { close: true } and waits on signals[CLOSED], which the worker
// raises once its connection is closed: after that it never touches the file again.
import { isMainThread, parentPort, workerData } from "node:worker_threads";

export const ABORT = 0;
export const CLOSED = 1;
/** Rows written between two looks at the abort signal. */
const ROWS_PER_ABORT_CHECK = 256;

/** Prepares the fold's statements on `db`; `signals` (an Int32Array over shared memory) lets a fold be aborted. */
export function prepareFold(db, sql, signals = null) {
  return {
    signals,
    document: db.prepare(sql.upsertDocument),
    indexEntry: db.prepare(sql.upsertIndexEntry),
    receipt: db.prepare(sql.upsertReceipt),
    meta: db.prepare(sql.updateMeta),
    transaction: db.transaction((statements, job) => writeRows(statements, job)),
  };
}

/** Writes `job` in one transaction (committed when this returns; rolled back if it throws). */
export function writeFold(statements, job) {
  statements.transaction(statements, job);
}

/** Rows come in key order (FoldJob.ts), and are written in that order. */
function writeRows(statements, job) {
  const { documents, indexEntries, receipts } = job;
  for (let at = 0; at < documents.ids.length; at++) {
    if (at % ROWS_PER_ABORT_CHECK === 0) checkAbort(statements);
    statements.document.run(documents.tableNumbers[at], documents.ids[at], documents.ts[at], documents.values[at], documents.prevTs[at]);
  }
  const keys = keyViews(indexEntries);
  for (let at = 0; at < keys.length; at++) {
    if (at % ROWS_PER_ABORT_CHECK === 0) checkAbort(statements);
    statements.indexEntry.run(indexEntries.indexIds[at], keys[at], indexEntries.ts[at], indexEntries.docIds[at]);
  }
  for (let at = 0; at < receipts.clientIds.length; at++) {
    statements.receipt.run(receipts.clientIds[at], receipts.seqs[at], receipts.ts[at], receipts.results[at]);
  }
  statements.meta.run(...job.meta);
}

function checkAbort(statements) {
  if (statements.signals !== null && Atomics.load(statements.signals, ABORT) === 1) throw new Error("fold aborted: the store is closing");
}

/** The keys of a job travel as one byte array plus offsets; these are views into it. */
function keyViews(indexEntries) {
  const { keyBytes, keyOffsets } = indexEntries;
  const buffer = Buffer.from(keyBytes.buffer, keyBytes.byteOffset, keyBytes.byteLength);
  const views = new Array(keyOffsets.length - 1);
  for (let at = 0; at < views.length; at++) views[at] = buffer.subarray(keyOffsets[at], keyOffsets[at + 1]);
  return views;
}

if (!isMainThread && workerData?.cairnFold) {
  const { default: Database } = await import("better-sqlite3");
  const { path, pragmas, sql, signals } = workerData.cairnFold;
  const db = new Database(path, { fileMustExist: true });
  for (const pragma of pragmas) db.pragma(pragma);
  const statements = prepareFold(db, sql, signals);
  parentPort.on("message", (message) => {
    if (message.close) {
      try {
        db.close();
      } finally {
        Atomics.store(signals, CLOSED, 1);
        Atomics.notify(signals, CLOSED);
        parentPort.close();
      }
      return;
    }
    try {
      writeFold(statements, message.job);
      parentPort.postMessage({ id: message.id });
    } catch (error) {
      parentPort.postMessage({ id: message.id, error: { message: String(error?.message ?? error), code: error?.code } });
    }
  });
  parentPort.postMessage({ ready: true });
}
