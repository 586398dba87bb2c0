// The fold: writes a batch of overlay rows into a store's SQLite file in one transaction
// (DESIGN.md §6). Plain JavaScript so that it runs as a worker thread under every way
// Cairn is started (tsx, vitest, plain node) without a TypeScript loader in the worker;
// its types are in foldWorker.d.mts, its SQL comes from the caller (statements.ts), so
// the schema is known in one place.
//
// As a worker (workerData.cairnFold set): opens the file with the given pragmas, then
// answers each message { id, job } with { id } once the transaction committed, or
// { id, error } once it rolled back, and { id, checkpoint } with { id, walFrames } once
// that WAL checkpoint ran (the frames in the WAL, as SQLite reports them). The main thread sends one message at a time to each worker: a store runs two,
// one folding, one checkpointing beside it (Folder.ts). To close,
// the main thread raises signals[ABORT] (a fold in flight then rolls back within a few
// hundred rows), sends { close: true } and waits on signals[CLOSED], which the worker
// raises once its connection is closed: after that it never touches the file again.
import { isMainThread, parentPort, workerData } from "node:worker_threads";

export const ABORT = 0;
export const CLOSED = 1;

/** Prepares the fold's statements on `db`; `signals` (an Int32Array over shared memory) lets a fold be aborted. */
export function prepareFold(db, sql, signals = null) {
  return {
    signals,
    rowsPerStatement: sql.rowsPerStatement,
    document: db.prepare(sql.upsertDocument),
    documents: db.prepare(sql.upsertDocuments),
    indexEntry: db.prepare(sql.upsertIndexEntry),
    indexEntries: db.prepare(sql.upsertIndexEntries),
    receipt: db.prepare(sql.upsertReceipt),
    dropReceiptsBelowFloor: db.prepare(sql.dropReceiptsBelowFloor),
    meta: db.prepare(sql.updateMeta),
    transaction: db.transaction((statements, job) => writeRows(statements, job)),
  };
}

/** Writes `job` in one transaction (committed when this returns; rolled back if it throws). */
export function writeFold(statements, job) {
  statements.transaction(statements, job);
}

/**
 * Rows come in key order (FoldJob.ts) and are written in that order, `rowsPerStatement`
 * at a time by the multi-row statements, the remainder one by one. The abort signal is
 * looked at before each multi-row statement.
 */
function writeRows(statements, job) {
  const { documents, indexEntries, receipts } = job;
  const ids = columnViews(documents.ids);
  const values = columnViews(documents.values);
  writeInGroups(statements, statements.documents, statements.document, documents.count, 5, (parameters, offset, at) => {
    parameters[offset] = documents.tableNumbers[at];
    parameters[offset + 1] = ids(at);
    parameters[offset + 2] = documents.ts[at];
    parameters[offset + 3] = values(at);
    const prevTs = documents.prevTs[at];
    parameters[offset + 4] = Number.isNaN(prevTs) ? null : prevTs;
  });
  const keys = columnViews(indexEntries.keys);
  const docIds = columnViews(indexEntries.docIds);
  writeInGroups(statements, statements.indexEntries, statements.indexEntry, indexEntries.count, 4, (parameters, offset, at) => {
    parameters[offset] = indexEntries.indexIds[at];
    parameters[offset + 1] = keys(at);
    parameters[offset + 2] = indexEntries.ts[at];
    parameters[offset + 3] = docIds(at);
  });
  for (let at = 0; at < receipts.clientIds.length; at++) {
    statements.receipt.run(
      receipts.clientIds[at], receipts.seqs[at], receipts.ts[at], receipts.results[at], receipts.routes[at], receipts.owners[at], receipts.floorSeqs[at],
    );
  }
  // After every insert: a receipt the client acknowledged before this fold is dropped too.
  for (let at = 0; at < receipts.clientIds.length; at++) {
    if (receipts.floorSeqs[at] > 0) statements.dropReceiptsBelowFloor.run(receipts.clientIds[at], receipts.floorSeqs[at], receipts.owners[at]);
  }
  statements.meta.run(...job.meta);
}

function writeInGroups(statements, many, one, rows, columns, fill) {
  const group = statements.rowsPerStatement;
  const parameters = rows >= group ? new Array(group * columns) : [];
  let at = 0;
  for (; at + group <= rows; at += group) {
    checkAbort(statements);
    for (let row = 0; row < group; row++) fill(parameters, row * columns, at + row);
    many.run(parameters);
  }
  const single = new Array(columns);
  for (; at < rows; at++) {
    fill(single, 0, at);
    one.run(single);
  }
}

function checkAbort(statements) {
  if (statements.signals !== null && Atomics.load(statements.signals, ABORT) === 1) throw new Error("fold aborted: the store is closing");
}

/**
 * Value n of a packed column (FoldJob.ts) as a Buffer view into it, or null. Text columns
 * are bound as these bytes and cast to TEXT by the statements (statements.ts), so no
 * string is made.
 */
function columnViews(column) {
  const { bytes, offsets, nulls } = column;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (at) => (nulls[at] === 1 ? null : buffer.subarray(offsets[at], offsets[at + 1]));
}

if (!isMainThread && workerData?.cairnFold) {
  const { path, pragmas, sql, signals, role } = workerData.cairnFold;
  let db;
  let statements = null;
  try {
    const { default: Database } = await import("better-sqlite3");
    db = new Database(path, { fileMustExist: true });
    for (const pragma of pragmas) db.pragma(pragma);
    // A checkpointing worker never folds: it needs no statements (nor the tables they name).
    if (role === "fold") statements = prepareFold(db, sql, signals);
  } catch (error) {
    // A worker that cannot start never closes a connection: say so at once rather than
    // let a closing store wait for it.
    db?.close();
    Atomics.store(signals, CLOSED, 1);
    Atomics.notify(signals, CLOSED);
    throw error;
  }
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
    if (message.checkpoint !== undefined) {
      // Only the modes the main thread asks for; a busy or failed checkpoint is not an
      // error (the next one retries), it reports no frame counts.
      let walFrames;
      try {
        const [result] = db.pragma(`wal_checkpoint(${message.checkpoint === "TRUNCATE" ? "TRUNCATE" : "PASSIVE"})`);
        walFrames = result.log;
      } catch {
        // Counts nothing: the WAL is as the last checkpoint found it.
      }
      parentPort.postMessage({ id: message.id, walFrames });
      return;
    }
    try {
      if (statements === null) throw new Error("a checkpointing worker was sent a fold");
      writeFold(statements, message.job);
      parentPort.postMessage({ id: message.id });
    } catch (error) {
      parentPort.postMessage({ id: message.id, error: { message: String(error?.message ?? error), code: error?.code } });
    }
  });
  parentPort.postMessage({ ready: true });
}
