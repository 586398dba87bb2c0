// The fold: writes a batch of overlay rows into a store's SQLite file in one transaction
// (DESIGN.md §6). Plain JavaScript so that it runs as a worker thread under every way
// Cairn is started (tsx, vitest, plain node) without a TypeScript loader in the worker;
// its types are in foldWorker.d.mts, its SQL comes from the caller (statements.ts), so
// the schema is known in one place.
//
// As a worker (workerData.cairnFold set): opens the file with the given pragmas, then
// answers each message { id, job } with { id } once the transaction committed, or
// { id, error } once it rolled back. The main thread sends one job at a time.
import { isMainThread, parentPort, workerData } from "node:worker_threads";

/** Prepares the fold's statements on `db`. */
export function prepareFold(db, sql) {
  return {
    document: db.prepare(sql.upsertDocument),
    indexEntry: db.prepare(sql.upsertIndexEntry),
    receipt: db.prepare(sql.upsertReceipt),
    history: db.prepare(sql.appendIndexHistory),
    meta: db.prepare(sql.updateMeta),
    transaction: db.transaction((statements, job) => writeRows(statements, job)),
  };
}

/** Writes `job` in one transaction (committed when this returns; rolled back if it throws). */
export function writeFold(statements, job) {
  statements.transaction(statements, job);
}

function writeRows(statements, job) {
  const { documents, indexEntries, receipts } = job;
  // Sorted by key, rows of one B-tree page are written together: a fold touches each
  // leaf page once however many of its rows changed. Ties keep apply order, so a later
  // overwrite of the same (key, ts) still wins.
  const documentOrder = sortedOrder(documents.ids.length, (left, right) => {
    const a = documents.ids[left];
    const b = documents.ids[right];
    return a < b ? -1 : a > b ? 1 : documents.ts[left] - documents.ts[right];
  });
  for (const at of documentOrder) {
    statements.document.run(documents.tableNumbers[at], documents.ids[at], documents.ts[at], documents.values[at], documents.prevTs[at]);
  }
  const keys = keyViews(indexEntries);
  const entryOrder = sortedOrder(keys.length, (left, right) =>
    indexEntries.indexIds[left] - indexEntries.indexIds[right] ||
    Buffer.compare(keys[left], keys[right]) ||
    indexEntries.ts[left] - indexEntries.ts[right],
  );
  for (const at of entryOrder) {
    statements.indexEntry.run(indexEntries.indexIds[at], keys[at], indexEntries.ts[at], indexEntries.docIds[at]);
  }
  // The history log stays in apply (= ts) order: pruning walks it from the start.
  for (let at = 0; at < keys.length; at++) statements.history.run(indexEntries.ts[at], indexEntries.indexIds[at], keys[at]);
  for (let at = 0; at < receipts.clientIds.length; at++) {
    statements.receipt.run(receipts.clientIds[at], receipts.seqs[at], receipts.ts[at], receipts.results[at]);
  }
  statements.meta.run(...job.meta);
}

/** Indexes 0..count-1 sorted by `compare`, stable. */
function sortedOrder(count, compare) {
  const order = new Array(count);
  for (let at = 0; at < count; at++) order[at] = at;
  return order.sort((left, right) => compare(left, right) || left - right);
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
  const { path, pragmas, sql } = workerData.cairnFold;
  const db = new Database(path, { fileMustExist: true });
  for (const pragma of pragmas) db.pragma(pragma);
  const statements = prepareFold(db, sql);
  parentPort.on("message", (message) => {
    if (message.close) {
      db.close();
      parentPort.postMessage({ closed: true });
      parentPort.close();
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
