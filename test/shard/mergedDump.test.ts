/**
 * Scenario: a shard's state as one dump made of a base snapshot's parts overlaid by a dump
 * of the changes after it (MergedDump), instead of restoring the base and replaying the
 * changes into SQLite. What it proves:
 *
 * - The merge is exact: for random bases and random change batches (new, rewritten,
 *   deleted and resurrected documents; index keys added, moved and removed; receipts new,
 *   rewritten, and floors that drop base receipts of the same client and owner but not of
 *   another owner), the merged rows equal, kind by kind and in order, the dump of a store
 *   that restored the base and applied the same batches. The base comes as snapshot parts
 *   (records in the segment record encoding, cut at random row boundaries, a part often
 *   spanning two kinds); the output's runs of base records still encoded (EncodedRows)
 *   are decoded to compare, their counts and kinds checked, and the rounds do produce
 *   both encoded runs and row chunks. Client ids mix ASCII, 2-byte, 3-byte
 *   (U+E000–U+FFFF) and astral characters, where SQLite's order (UTF-8 bytes) differs
 *   from JS's `<` (UTF-16 units); index keys share prefixes and hold 0x00/0xff bytes.
 *   Part boundaries of the base and chunk boundaries of the changes vary. An empty base,
 *   no changes at all and a base whose every document is deleted are covered too.
 * - The merge's orders: compareStrings orders strings as their UTF-8 bytes do (SQLite's
 *   BINARY collation), and compareBytes byte arrays as Buffer.compare (memcmp) does.
 * - A base out of order (documents not by id, within a part or across two, or kinds out
 *   of turn), a part whose header counts differ from its records, and a payload that is
 *   not records fail with SNAPSHOT_INVALID (the snapshot's fault); changes out of order
 *   fail with INTERNAL; neither merges wrong.
 * - close() mid-way returns the base's iterator (its `finally` runs) and later reads
 *   fail with LOCAL_CLOSED.
 *
 * Why: a restore at a past ts trusts this merge instead of SQLite to build the state; a
 * row out of place or a receipt kept past its floor would be a silently wrong shard.
 *
 * The random changes stay within what the log can hold: a receipt's (clientId, seq) is
 * written again only by the same owner with the same floor (a replay), and no receipt is
 * written below its client and owner's floor (such a mutation is refused). Within those
 * rules the result does not depend on how folds group the batches, so both stores flush
 * at random points. A test's rounds reuse its three file stores: each round restores them,
 * which replaces everything they held (and spares a fold worker's start per round).
 * Document ids are ASCII here (DocumentIds), so the base-against-change comparison of ids
 * (the base's UTF-8 bytes against a change's string) takes its ASCII path.
 */
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/errors.js";
import { type Random, randomInt, SeededRandom } from "../../src/base/random.js";
import type { DumpChunk, DumpCursor, LocalMeta, LocalStore, RestoreMeta } from "../../src/local/index.js";
import { type DocumentId, newDocumentId } from "../../src/model/DocumentId.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../../src/model/Revision.js";
import { ROUTE_BYTES } from "../../src/model/shardFor.js";
import { ByteWriter } from "../../src/segments/ByteWriter.js";
import { decodeRecords, writeIndexUpdate, writeReceipt, writeRevision } from "../../src/segments/recordCodec.js";
import { compareBytes, compareStrings } from "../../src/model/index.js";
import { MergedDump } from "../../src/shard/MergedDump.js";
import type { EncodedSnapshotPayload, SnapshotPartHeader } from "../../src/snapshots/SnapshotPart.js";
import type { SnapshotChunk } from "../../src/snapshots/writeSnapshot.js";
import { batch, drainDump, hex, localFixtures, rejected } from "../local/localFixtures.js";

const { dirs, stores } = localFixtures();

/** Where the base stands: every base row is at or below BASE_TS, every change above it. */
const BASE_TS = 1_000;
const BASE_META: RestoreMeta = { appliedSeqno: 10, epoch: 1, lastHash: null, frontierTs: BASE_TS };

/**
 * Client ids whose UTF-8 order is not their UTF-16 order: "\uE000" < "😀" in UTF-8
 * (EE.. < F0..) but "😀" (D83D DE00) < "\uE000" for JS's `<`.
 */
const CLIENT_IDS = [
  "a",
  "ab",
  "phone",
  "\u0080",
  "\u00e9",
  "\u07ff",
  "\u0800",
  "\ud7ff",
  "\ue000",
  "\ufffd",
  "\uffff",
  "😀",
  "\u{10000}",
  "\u{10ffff}",
  "a\ue000",
  "a😀",
  "a\u{10000}b",
];
/** undefined: a receipt from before owners (never with a floor); "" is an owner of its own. */
const OWNERS: readonly (string | undefined)[] = [undefined, "user:ada", "user:eve", ""];
/** 300 takes a 2-byte varint: its ids start differently from the others'. */
const TABLE_NUMBERS = [1, 2, 9, 300];
const INDEX_IDS = [1, 2, 5];
/** Prefixes shared by many keys, so keys often differ only in a late byte or in length. */
const KEY_PREFIXES: readonly (readonly number[])[] = [[], [0x00], [0xff], [0x00, 0x00], [0xff, 0xff], [0x61], [0x61, 0x00], [0x61, 0xff]];
/** Seqs are drawn below this: small, so floors often fall above other receipts' seqs. */
const SEQ_RANGE = 24;

function pick<T>(random: Random, items: readonly T[]): T {
  return items[randomInt(random, items.length)]!;
}

function chance(random: Random, percent: number): boolean {
  return randomInt(random, 100) < percent;
}

function randomKey(random: Random): Uint8Array {
  const bytes = [...pick(random, KEY_PREFIXES)];
  for (let tail = randomInt(random, 4); tail > 0; tail--) {
    bytes.push(pick(random, [0x00, 0xff, 0x61, randomInt(random, 256)]));
  }
  if (bytes.length === 0) bytes.push(0x00);
  return Uint8Array.from(bytes);
}

function randomRoute(random: Random): Uint8Array | null {
  return chance(random, 30) ? random.bytes(ROUTE_BYTES) : null;
}

function randomReceipt(random: Random, clientId: string, seq: number, ts: number, owner: string | undefined): ClientReceipt {
  const receipt: ClientReceipt = { clientId, seq, ts, result: `{"seq":${seq},"ts":${ts}}`, route: randomRoute(random) };
  if (owner === undefined) return receipt;
  return seq >= 1 && chance(random, 35) ? { ...receipt, owner, floorSeq: 1 + randomInt(random, seq) } : { ...receipt, owner };
}

function entryKey(indexId: number, key: Uint8Array): string {
  return `${indexId}/${hex(key)}`;
}

function receiptKey(clientId: string, seq: number): string {
  return JSON.stringify([clientId, seq]);
}

function floorKey(clientId: string, owner: string | null | undefined): string {
  return JSON.stringify([clientId, owner ?? null]);
}

/** What the generator knows of the state it changes: enough to pick realistic changes. */
interface Model {
  readonly documents: Map<DocumentId, { readonly tableNumber: number; readonly ts: number; readonly live: boolean }>;
  readonly entries: Map<string, { readonly indexId: number; readonly key: Uint8Array; readonly live: boolean }>;
  readonly receipts: Map<string, ClientReceipt>;
  /** Per client and owner, the highest floor any applied receipt carried. */
  readonly floors: Map<string, number>;
}

function floorOfModel(model: Model, clientId: string, owner: string | undefined): number {
  return model.floors.get(floorKey(clientId, owner)) ?? 0;
}

/** Applies a batch to the model as a fold does: every row written, then each floor drops its client and owner's receipts below it. */
function applyToModel(model: Model, records: { revisions: readonly DocumentRevision[]; indexUpdates: readonly IndexUpdate[]; receipts: readonly ClientReceipt[] }): void {
  for (const revision of records.revisions) model.documents.set(revision.id, { tableNumber: revision.tableNumber, ts: revision.ts, live: revision.value !== null });
  for (const update of records.indexUpdates) model.entries.set(entryKey(update.indexId, update.key), { indexId: update.indexId, key: update.key, live: update.docId !== null });
  for (const receipt of records.receipts) model.receipts.set(receiptKey(receipt.clientId, receipt.seq), receipt);
  for (const floorHolder of records.receipts) {
    const floorSeq = floorHolder.floorSeq ?? 0;
    if (floorSeq === 0) continue;
    const key = floorKey(floorHolder.clientId, floorHolder.owner);
    model.floors.set(key, Math.max(model.floors.get(key) ?? 0, floorSeq));
    for (const [at, receipt] of model.receipts) {
      if (receipt.clientId === floorHolder.clientId && (receipt.owner ?? null) === (floorHolder.owner ?? null) && receipt.seq < floorSeq) model.receipts.delete(at);
    }
  }
}

function modelOfDump(chunks: readonly DumpChunk[]): Model {
  const model: Model = { documents: new Map(), entries: new Map(), receipts: new Map(), floors: new Map() };
  const rows = rowsOf(chunks);
  applyToModel(model, { revisions: rows.documents, indexUpdates: rows.indexEntries, receipts: rows.receipts });
  return model;
}

/** A base state as one batch: documents of several tables, index entries, receipts of every client (some with floors). */
function randomBase(random: Random): { revisions: DocumentRevision[]; indexUpdates: IndexUpdate[]; receipts: ClientReceipt[] } {
  const revisions: DocumentRevision[] = [];
  for (let count = randomInt(random, 26); count > 0; count--) {
    const tableNumber = pick(random, TABLE_NUMBERS);
    revisions.push({ tableNumber, id: newDocumentId(tableNumber, random), ts: 1 + randomInt(random, BASE_TS), value: `{"base":${count}}`, prevTs: null });
  }
  const indexUpdates = new Map<string, IndexUpdate>();
  for (let count = randomInt(random, 26); count > 0; count--) {
    const indexId = pick(random, INDEX_IDS);
    const key = randomKey(random);
    const docId = revisions.length > 0 && chance(random, 80) ? pick(random, revisions).id : newDocumentId(1, random);
    indexUpdates.set(entryKey(indexId, key), { indexId, key, ts: 1 + randomInt(random, BASE_TS), docId });
  }
  const receipts: ClientReceipt[] = [];
  for (const clientId of CLIENT_IDS) {
    const seqs = new Set<number>();
    for (let count = randomInt(random, 4); count > 0; count--) seqs.add(randomInt(random, SEQ_RANGE));
    for (const seq of seqs) receipts.push(randomReceipt(random, clientId, seq, 1 + randomInt(random, BASE_TS), pick(random, OWNERS)));
  }
  return { revisions, indexUpdates: [...indexUpdates.values()], receipts };
}

/**
 * One batch of changes at `ts` (each key written at most once in it). With
 * `deleteAllDocuments`, every live document of the model is deleted in it.
 */
function randomChanges(
  random: Random,
  model: Model,
  ts: number,
  deleteAllDocuments: boolean,
): { revisions: DocumentRevision[]; indexUpdates: IndexUpdate[]; receipts: ClientReceipt[] } {
  const revisions = new Map<DocumentId, DocumentRevision>();
  const write = (revision: DocumentRevision) => {
    if (!revisions.has(revision.id)) revisions.set(revision.id, revision);
  };
  const documents = [...model.documents];
  const live = documents.filter(([, document]) => document.live);
  const dead = documents.filter(([, document]) => !document.live);
  if (deleteAllDocuments) for (const [id, document] of live) write({ tableNumber: document.tableNumber, id, ts, value: null, prevTs: document.ts });
  for (let count = randomInt(random, 7); count > 0; count--) {
    const roll = randomInt(random, 100);
    if (roll < 35 || (roll < 80 && live.length === 0) || (roll >= 80 && dead.length === 0)) {
      const tableNumber = pick(random, TABLE_NUMBERS);
      write({ tableNumber, id: newDocumentId(tableNumber, random), ts, value: `{"new":${ts}}`, prevTs: null });
    } else if (roll < 60) {
      const [id, document] = pick(random, live);
      write({ tableNumber: document.tableNumber, id, ts, value: `{"rewritten":${ts}}`, prevTs: document.ts });
    } else if (roll < 80) {
      const [id, document] = pick(random, live);
      write({ tableNumber: document.tableNumber, id, ts, value: null, prevTs: document.ts });
    } else {
      const [id, document] = pick(random, dead);
      write({ tableNumber: document.tableNumber, id, ts, value: `{"resurrected":${ts}}`, prevTs: document.ts });
    }
  }

  const indexUpdates = new Map<string, IndexUpdate>();
  const point = (indexId: number, key: Uint8Array, docId: DocumentId | null) => {
    const at = entryKey(indexId, key);
    if (!indexUpdates.has(at)) indexUpdates.set(at, { indexId, key, ts, docId });
  };
  const anyDocument = (): DocumentId => (documents.length > 0 && chance(random, 80) ? pick(random, documents)[0] : newDocumentId(1, random));
  const entries = [...model.entries.values()];
  const liveEntries = entries.filter((entry) => entry.live);
  const removedEntries = entries.filter((entry) => !entry.live);
  for (let count = randomInt(random, 7); count > 0; count--) {
    const roll = randomInt(random, 100);
    if (roll < 40 || (roll < 90 && liveEntries.length === 0) || (roll >= 90 && removedEntries.length === 0)) {
      point(pick(random, INDEX_IDS), randomKey(random), anyDocument());
    } else if (roll < 65) {
      const entry = pick(random, liveEntries);
      point(entry.indexId, entry.key, anyDocument());
    } else if (roll < 90) {
      const entry = pick(random, liveEntries);
      point(entry.indexId, entry.key, null);
    } else {
      const entry = pick(random, removedEntries);
      point(entry.indexId, entry.key, anyDocument());
    }
  }

  const receipts = new Map<string, ClientReceipt>();
  for (let count = randomInt(random, 6); count > 0; count--) {
    if (chance(random, 25) && model.receipts.size > 0) {
      // A floor above a receipt held: of its own owner (it drops that receipt) or of another (it must not).
      const below = pick(random, [...model.receipts.values()]);
      const owner = below.owner !== undefined && chance(random, 60) ? below.owner : pick(random, OWNERS.filter((other): other is string => other !== undefined && other !== below.owner));
      const seq = Math.max(below.seq + 1, floorOfModel(model, below.clientId, owner)) + randomInt(random, 4);
      const at = receiptKey(below.clientId, seq);
      if (model.receipts.has(at) || receipts.has(at)) continue;
      const floorSeq = below.seq + 1 + randomInt(random, seq - below.seq);
      receipts.set(at, { clientId: below.clientId, seq, ts, result: `{"floor":${floorSeq}}`, route: randomRoute(random), owner, floorSeq });
      continue;
    }
    if (chance(random, 30) && model.receipts.size > 0) {
      // A replay by the same owner: the same owner and floor, a later ts and result.
      const old = pick(random, [...model.receipts.values()]);
      const at = receiptKey(old.clientId, old.seq);
      if (old.seq < floorOfModel(model, old.clientId, old.owner) || receipts.has(at)) continue;
      receipts.set(at, { ...old, ts, result: `{"again":${ts}}` });
      continue;
    }
    const clientId = pick(random, CLIENT_IDS);
    const owner = pick(random, OWNERS);
    for (let attempt = 0; attempt < 5; attempt++) {
      const seq = randomInt(random, SEQ_RANGE);
      const at = receiptKey(clientId, seq);
      if (seq < floorOfModel(model, clientId, owner) || model.receipts.has(at) || receipts.has(at)) continue;
      receipts.set(at, randomReceipt(random, clientId, seq, ts, owner));
      break;
    }
  }
  return { revisions: [...revisions.values()], indexUpdates: [...indexUpdates.values()], receipts: [...receipts.values()] };
}

async function drainMerged(merged: MergedDump): Promise<SnapshotChunk[]> {
  const chunks: SnapshotChunk[] = [];
  try {
    for (let chunk = await merged.next(); chunk !== null; chunk = await merged.next()) chunks.push(chunk);
  } finally {
    merged.close();
  }
  return chunks;
}

/** The chunks again, one per turn of the event loop, as a snapshot's reader yields them. */
async function* replay(chunks: readonly DumpChunk[]): AsyncGenerator<DumpChunk> {
  for (const chunk of chunks) {
    await Promise.resolve();
    yield chunk;
  }
}

/** One record of a base part, of its kind. */
type KindRow =
  | { readonly kind: "documents"; readonly row: DocumentRevision }
  | { readonly kind: "indexEntries"; readonly row: IndexUpdate }
  | { readonly kind: "receipts"; readonly row: ClientReceipt };

type Counts = Pick<SnapshotPartHeader, "documents" | "indexEntries" | "receipts">;

/**
 * A base part holding `rows` in the given order, encoded as a snapshot's part is; its
 * header counts them (or says `counts` instead: a header that lies).
 */
function basePart(part: number, rows: readonly KindRow[], counts?: Partial<Counts>): EncodedSnapshotPayload {
  const writer = new ByteWriter(64);
  const counted: Counts = { documents: 0, indexEntries: 0, receipts: 0 };
  for (const { kind, row } of rows) {
    if (kind === "documents") writeRevision(writer, row);
    else if (kind === "indexEntries") writeIndexUpdate(writer, row);
    else writeReceipt(writer, row);
    counted[kind]++;
  }
  const header: SnapshotPartHeader = { deploymentId: "merged-dump-test", shard: 0, seqno: BASE_META.appliedSeqno, part, ...counted, ...counts };
  return { header, payload: Buffer.from(writer.finish()), hash: "" };
}

/** A part of raw bytes (not necessarily records) with the given header counts. */
function rawPart(part: number, payload: Buffer, counts: Counts): EncodedSnapshotPayload {
  return { header: { deploymentId: "merged-dump-test", shard: 0, seqno: BASE_META.appliedSeqno, part, ...counts }, payload, hash: "" };
}

function kindRows(rows: RowsByKind): KindRow[] {
  return [
    ...rows.documents.map((row) => ({ kind: "documents", row }) as const),
    ...rows.indexEntries.map((row) => ({ kind: "indexEntries", row }) as const),
    ...rows.receipts.map((row) => ({ kind: "receipts", row }) as const),
  ];
}

/**
 * A base state's rows in dump order as a snapshot's parts, cut at random row boundaries
 * (1 to 6 rows a part, so a part often ends one kind and starts the next). No rows: no
 * part, or one empty part (as writeSnapshot writes for an empty state).
 */
function baseParts(rows: RowsByKind, random: Random): EncodedSnapshotPayload[] {
  const all = kindRows(rows);
  if (all.length === 0) return chance(random, 50) ? [] : [basePart(0, [])];
  const parts: EncodedSnapshotPayload[] = [];
  for (let at = 0; at < all.length; ) {
    const size = 1 + randomInt(random, 6);
    parts.push(basePart(parts.length, all.slice(at, at + size)));
    at += size;
  }
  return parts;
}

/** The parts, one per turn of the event loop, as a snapshot's payload reader yields them. */
async function* replayParts(parts: readonly EncodedSnapshotPayload[]): AsyncGenerator<EncodedSnapshotPayload> {
  for (const part of parts) {
    await Promise.resolve();
    yield part;
  }
}

/** What a merge's output was made of: runs of base records passed on encoded, and row chunks. */
interface ChunkTally {
  encodedChunks: number;
  /** Encoded runs of more than one record (records joined within a part). */
  encodedRunsOfSeveral: number;
  encodedDocumentChunks: number;
  encodedEntryChunks: number;
  rowChunks: number;
}

function emptyChunkTally(): ChunkTally {
  return { encodedChunks: 0, encodedRunsOfSeveral: 0, encodedDocumentChunks: 0, encodedEntryChunks: 0, rowChunks: 0 };
}

/**
 * The merged output's rows by kind: an encoded run decoded (its count checked, and that
 * it holds records of its own kind only), a row chunk as it is. No chunk is empty.
 */
function rowsOfMerged(chunks: readonly SnapshotChunk[], label: string, tally: ChunkTally = emptyChunkTally()): RowsByKind {
  const rows: RowsByKind = { documents: [], indexEntries: [], receipts: [] };
  for (const chunk of chunks) {
    if ("encoded" in chunk) {
      const decoded = decodeRecords(Buffer.from(chunk.encoded));
      const byKind: RowsByKind = { documents: [...decoded.revisions], indexEntries: [...decoded.indexUpdates], receipts: [...decoded.receipts] };
      const own = byKind[chunk.kind];
      expect(own.length, `${label}: an empty encoded ${chunk.kind} chunk`).toBeGreaterThan(0);
      expect(chunk.count, `${label}: an encoded ${chunk.kind} chunk's count`).toBe(own.length);
      expect(decoded.revisions.length + decoded.indexUpdates.length + decoded.receipts.length, `${label}: an encoded ${chunk.kind} chunk holds records of another kind`).toBe(own.length);
      (rows[chunk.kind] as unknown[]).push(...own);
      tally.encodedChunks++;
      if (chunk.count > 1) tally.encodedRunsOfSeveral++;
      if (chunk.kind === "documents") tally.encodedDocumentChunks++;
      if (chunk.kind === "indexEntries") tally.encodedEntryChunks++;
    } else {
      expect(chunk.rows.length, `${label}: an empty ${chunk.kind} chunk`).toBeGreaterThan(0);
      (rows[chunk.kind] as unknown[]).push(...chunk.rows);
      tally.rowChunks++;
    }
  }
  return rows;
}

/** A changes cursor that yields `chunks` as they are (in whatever order they are). */
function fakeChangesCursor(chunks: readonly DumpChunk[]): DumpCursor {
  const meta: LocalMeta = { shard: 0, deploymentId: "merged-dump-test", appliedSeqno: BASE_META.appliedSeqno + 1, epoch: 1, lastHash: null, frontierTs: BASE_TS + 10, minReadableTs: 0 };
  let at = 0;
  return {
    meta,
    next: () => chunks[at++] ?? null,
    close: () => undefined,
  };
}

/** Merges `parts` with no changes (an empty dump of changes, no floors): for bases that must be refused. */
async function mergeWithoutChanges(parts: readonly EncodedSnapshotPayload[]): Promise<SnapshotChunk[]> {
  return drainMerged(new MergedDump(replayParts(parts), fakeChangesCursor([]), () => 0));
}

async function expectSnapshotInvalid(merging: Promise<unknown>, message?: string): Promise<void> {
  const error = await rejected(merging);
  expect(error).toBeInstanceOf(CairnError);
  expect(error.code, error.message).toBe("SNAPSHOT_INVALID");
  if (message !== undefined) expect(error.message).toContain(message);
}

interface RowsByKind {
  documents: DocumentRevision[];
  indexEntries: IndexUpdate[];
  receipts: ClientReceipt[];
}

function rowsOf(chunks: readonly DumpChunk[]): RowsByKind {
  const rows: RowsByKind = { documents: [], indexEntries: [], receipts: [] };
  for (const chunk of chunks) (rows[chunk.kind] as unknown[]).push(...chunk.rows);
  return rows;
}

/** Rows as plain data: bytes as hex, so Buffers and Uint8Arrays compare by content. */
function comparable(rows: RowsByKind): unknown {
  return {
    documents: rows.documents.map((row) => ({ ...row })),
    indexEntries: rows.indexEntries.map((row) => ({ ...row, key: hex(row.key) })),
    receipts: rows.receipts.map((row) => ({ ...row, route: row.route === null ? null : hex(row.route) })),
  };
}

/** How often a round's base rows were replaced or dropped by the changes: what the merge had to get right. */
interface Coverage {
  documentsReplaced: number;
  documentsDropped: number;
  entriesReplaced: number;
  entriesDropped: number;
  receiptsReplaced: number;
  /** Base receipts a floor among the changes dropped (nothing else removes a receipt). */
  receiptsFloored: number;
  /** Base receipts kept although another owner of their client has a floor above them among the changes. */
  receiptsKeptBelowAnotherOwnersFloor: number;
  /** Rounds whose receipts' client ids are out of JS `<` order (UTF-8 order differs). */
  roundsOutOfUtf16Order: number;
  /** Base parts holding records of more than one kind. */
  partsSpanningKinds: number;
  /** What the merged outputs were made of. */
  readonly chunks: ChunkTally;
}

function emptyCoverage(): Coverage {
  return { documentsReplaced: 0, documentsDropped: 0, entriesReplaced: 0, entriesDropped: 0, receiptsReplaced: 0, receiptsFloored: 0, receiptsKeptBelowAnotherOwnersFloor: 0, roundsOutOfUtf16Order: 0, partsSpanningKinds: 0, chunks: emptyChunkTally() };
}

function countCoverage(coverage: Coverage, base: RowsByKind, result: RowsByKind, changesFloorOf: (clientId: string, owner: string | null) => number): void {
  const tally = <Row>(baseRows: readonly Row[], resultRows: readonly Row[], keyOf: (row: Row) => string, same: (a: Row, b: Row) => boolean): [number, number] => {
    const byKey = new Map(resultRows.map((row) => [keyOf(row), row]));
    let replaced = 0;
    let dropped = 0;
    for (const row of baseRows) {
      const now = byKey.get(keyOf(row));
      if (now === undefined) dropped++;
      else if (!same(row, now)) replaced++;
    }
    return [replaced, dropped];
  };
  const [documentsReplaced, documentsDropped] = tally(base.documents, result.documents, (row) => row.id, (a, b) => a.ts === b.ts);
  const [entriesReplaced, entriesDropped] = tally(base.indexEntries, result.indexEntries, (row) => entryKey(row.indexId, row.key), (a, b) => a.ts === b.ts);
  const [receiptsReplaced, receiptsFloored] = tally(base.receipts, result.receipts, (row) => receiptKey(row.clientId, row.seq), (a, b) => a.ts === b.ts);
  coverage.documentsReplaced += documentsReplaced;
  coverage.documentsDropped += documentsDropped;
  coverage.entriesReplaced += entriesReplaced;
  coverage.entriesDropped += entriesDropped;
  coverage.receiptsReplaced += receiptsReplaced;
  coverage.receiptsFloored += receiptsFloored;
  const kept = new Set(result.receipts.map((row) => receiptKey(row.clientId, row.seq)));
  for (const row of base.receipts) {
    if (!kept.has(receiptKey(row.clientId, row.seq))) continue;
    if (OWNERS.filter((owner) => owner !== row.owner).some((owner) => changesFloorOf(row.clientId, owner ?? null) > row.seq)) coverage.receiptsKeptBelowAnotherOwnersFloor++;
  }
  const clientIds = result.receipts.map((row) => row.clientId);
  if (clientIds.some((clientId, at) => at > 0 && clientId < clientIds[at - 1]!)) coverage.roundsOutOfUtf16Order++;
}

interface RoundShape {
  readonly emptyBase?: boolean;
  /** Number of change batches (default: 1 to 6, drawn from the seed). */
  readonly batches?: number;
  /** The first batch deletes every base document, and no later batch touches one. */
  readonly deleteAllBaseDocuments?: boolean;
}

/** The three stores a round uses, opened once per test: every round restores them, which replaces all they held. */
interface RoundStores {
  /** Builds the base state, whose dump is the base snapshot. */
  readonly scratch: LocalStore;
  /** Restores the base and applies the changes: the state the merge must equal. */
  readonly reference: LocalStore;
  /** Holds only the changes, from the base's position on. */
  readonly changes: LocalStore;
}

function openRoundStores(): RoundStores {
  return { scratch: stores.open(dirs.file()), reference: stores.open(dirs.file()), changes: stores.open(dirs.file()) };
}

/**
 * One round: a random base, random change batches applied to a store that restored the
 * base (the reference) and to one that holds only the changes; the merge of the base's
 * dump and the changes' dump must equal the reference's dump. Returns both sides' rows.
 */
async function runRound(
  { scratch, reference, changes }: RoundStores,
  seed: number,
  shape: RoundShape,
  coverage: Coverage,
): Promise<{ base: RowsByKind; expected: RowsByKind; merged: RowsByKind }> {
  const random = new SeededRandom(seed);
  await scratch.reset();
  const baseRecords = shape.emptyBase === true ? { revisions: [], indexUpdates: [], receipts: [] } : randomBase(random);
  scratch.apply(batch({ ...baseRecords, meta: { appliedSeqno: BASE_META.appliedSeqno, frontierTs: BASE_TS } }), { recordsChecked: true });
  const baseChunks = drainDump(await scratch.openDumpCursor({ rowsPerChunk: 1 + randomInt(random, 5) }));

  await reference.restore(replay(baseChunks), BASE_META, { recordsChecked: true });
  await changes.restore([], BASE_META);
  const model = modelOfDump(baseChunks);
  const baseIds = new Set(model.documents.keys());
  const batches = shape.batches ?? 1 + randomInt(random, 6);
  for (let index = 0; index < batches; index++) {
    const ts = BASE_TS + 10 * (index + 1);
    let records = randomChanges(random, model, ts, index === 0 && shape.deleteAllBaseDocuments === true);
    if (index > 0 && shape.deleteAllBaseDocuments === true) records = { ...records, revisions: records.revisions.filter((revision) => !baseIds.has(revision.id)) };
    applyToModel(model, records);
    for (const store of [reference, changes]) {
      store.apply(batch({ ...records, meta: { appliedSeqno: BASE_META.appliedSeqno + index + 1, frontierTs: ts } }), { recordsChecked: true });
      if (chance(random, 30)) await store.flush();
    }
  }
  const expected = rowsOf(drainDump(await reference.openDumpCursor()));
  const changeCursor = await changes.openDumpCursor({ includeRemovals: true, rowsPerChunk: 1 + randomInt(random, 4) });
  const base = rowsOf(baseChunks);
  // A random of its own: the parts' cuts leave the round's base and changes as they were.
  const parts = baseParts(base, new SeededRandom(1_000_003 * seed + 17));
  coverage.partsSpanningKinds += parts.filter(({ header }) => [header.documents, header.indexEntries, header.receipts].filter((count) => count > 0).length > 1).length;
  const mergedChunks = await drainMerged(new MergedDump(replayParts(parts), changeCursor, (clientId, owner) => changes.receiptFloor(clientId, owner)));
  const merged = rowsOfMerged(mergedChunks, `seed ${seed}`, coverage.chunks);
  expect(comparable(merged), `seed ${seed}`).toEqual(comparable(expected));
  countCoverage(coverage, base, expected, (clientId, owner) => changes.receiptFloor(clientId, owner));
  return { base, expected, merged };
}

describe("MergedDump", () => {
  it("equals the dump of a store that restored the base and applied the changes, for random bases and changes", async () => {
    const coverage = emptyCoverage();
    const roundStores = openRoundStores();
    for (let seed = 1; seed <= 20; seed++) await runRound(roundStores, seed, {}, coverage);
    // The rounds did exercise every way a base row is overridden, and UTF-8 order mattered.
    expect(coverage.documentsReplaced).toBeGreaterThan(0);
    expect(coverage.documentsDropped).toBeGreaterThan(0);
    expect(coverage.entriesReplaced).toBeGreaterThan(0);
    expect(coverage.entriesDropped).toBeGreaterThan(0);
    expect(coverage.receiptsReplaced).toBeGreaterThan(0);
    expect(coverage.receiptsFloored).toBeGreaterThan(0);
    expect(coverage.receiptsKeptBelowAnotherOwnersFloor).toBeGreaterThan(0);
    expect(coverage.roundsOutOfUtf16Order).toBeGreaterThan(0);
    // The base came in parts that span kinds, and the output held both base records passed
    // on encoded (runs of several among them) and rows.
    expect(coverage.partsSpanningKinds).toBeGreaterThan(0);
    expect(coverage.chunks.encodedDocumentChunks).toBeGreaterThan(0);
    expect(coverage.chunks.encodedEntryChunks).toBeGreaterThan(0);
    expect(coverage.chunks.encodedRunsOfSeveral).toBeGreaterThan(0);
    expect(coverage.chunks.rowChunks).toBeGreaterThan(0);
  });

  it("merges an empty base: the state is the changes alone", async () => {
    const coverage = emptyCoverage();
    const roundStores = openRoundStores();
    for (let seed = 101; seed <= 104; seed++) {
      const { base, merged } = await runRound(roundStores, seed, { emptyBase: true }, coverage);
      expect(base).toEqual({ documents: [], indexEntries: [], receipts: [] });
      expect(merged.documents.length + merged.indexEntries.length + merged.receipts.length).toBeGreaterThan(0);
    }
  });

  it("merges no changes: the state is the base alone", async () => {
    const coverage = emptyCoverage();
    const roundStores = openRoundStores();
    for (let seed = 201; seed <= 204; seed++) {
      const { base, merged } = await runRound(roundStores, seed, { batches: 0 }, coverage);
      expect(comparable(merged)).toEqual(comparable(base));
    }
  });

  it("merges changes that delete every base document", async () => {
    const coverage = emptyCoverage();
    const roundStores = openRoundStores();
    for (let seed = 301; seed <= 304; seed++) {
      const { base, merged } = await runRound(roundStores, seed, { deleteAllBaseDocuments: true }, coverage);
      expect(base.documents.length).toBeGreaterThan(0);
      const baseIds = new Set(base.documents.map((row) => row.id));
      expect(merged.documents.filter((row) => baseIds.has(row.id))).toEqual([]);
    }
  });

  it("compareStrings orders strings as their UTF-8 bytes do", () => {
    const random = new SeededRandom(7);
    /** [first, last] code points of each class: ASCII, 2-byte, 3-byte below and above the surrogates, astral. */
    const RANGES: readonly (readonly [number, number])[] = [
      [0x00, 0x7f],
      [0x80, 0x7ff],
      [0x800, 0xd7ff],
      [0xe000, 0xffff],
      [0x10000, 0x10ffff],
    ];
    /** A few code points of each class, so equal characters and shared prefixes are common. */
    const pool = RANGES.flatMap(([first, last]) => [first, last, ...Array.from({ length: 4 }, () => first + randomInt(random, last - first + 1))]);
    const randomString = (): string => Array.from({ length: randomInt(random, 6) }, () => String.fromCodePoint(pick(random, pool))).join("");
    let disagreementsWithUtf16 = 0;
    for (let pair = 0; pair < 5_000; pair++) {
      const a = randomString();
      // Half the time b extends or alters a's prefix, so strings differ late or only in length.
      const b = chance(random, 50) ? [...a].slice(0, randomInt(random, [...a].length + 1)).join("") + randomString() : randomString();
      const expected = Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
      expect(Math.sign(compareStrings(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(expected);
      expect(Math.sign(compareStrings(b, a))).toBe(expected === 0 ? 0 : -expected);
      if (expected !== (a < b ? -1 : a > b ? 1 : 0)) disagreementsWithUtf16++;
    }
    expect(compareStrings("\ue000", "😀")).toBeLessThan(0);
    expect(compareStrings("\uffff", "\u{10000}")).toBeLessThan(0);
    // The strings did include pairs JS's `<` orders the other way.
    expect(disagreementsWithUtf16).toBeGreaterThan(0);
  });

  it("compareBytes orders byte arrays as memcmp (Buffer.compare) does", () => {
    const random = new SeededRandom(8);
    /** Bytes at the edges and a few others, so equal bytes and shared prefixes are common. */
    const pool = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, ...Array.from({ length: 4 }, () => randomInt(random, 256))];
    const randomBytes = (): number[] => Array.from({ length: randomInt(random, 6) }, () => pick(random, pool));
    let prefixPairs = 0;
    for (let pair = 0; pair < 5_000; pair++) {
      const a = randomBytes();
      // Half the time b extends or alters a's prefix, so arrays differ late or only in length.
      const shared = chance(random, 50);
      const b = shared ? [...a.slice(0, randomInt(random, a.length + 1)), ...randomBytes()] : randomBytes();
      if (shared) prefixPairs++;
      const expected = Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b)));
      expect(Math.sign(compareBytes(Uint8Array.from(a), Uint8Array.from(b))), `${hex(Uint8Array.from(a))} vs ${hex(Uint8Array.from(b))}`).toBe(expected);
      expect(Math.sign(compareBytes(Uint8Array.from(b), Uint8Array.from(a)))).toBe(expected === 0 ? 0 : -expected);
      // Views into a larger buffer compare by their own bytes only.
      const backing = Buffer.from([0x42, ...a, 0x00, ...b, 0xff]);
      const aView = backing.subarray(1, 1 + a.length);
      const bView = backing.subarray(2 + a.length, 2 + a.length + b.length);
      expect(Math.sign(compareBytes(aView, bView))).toBe(expected);
    }
    expect(compareBytes(new Uint8Array(0), new Uint8Array(0))).toBe(0);
    expect(compareBytes(Uint8Array.of(0x00), new Uint8Array(0))).toBeGreaterThan(0);
    expect(compareBytes(Uint8Array.of(0x7f), Uint8Array.of(0x80))).toBeLessThan(0);
    expect(compareBytes(Uint8Array.of(0x61, 0xff), Uint8Array.of(0x61, 0xff, 0x00))).toBeLessThan(0);
    expect(prefixPairs).toBeGreaterThan(1_000);
  });

  it("refuses a base whose documents are not in id order (SNAPSHOT_INVALID), within a part or across two", async () => {
    const random = new SeededRandom(11);
    const [first, second] = [newDocumentId(1, random), newDocumentId(1, random)].sort(compareStrings);
    const document = (id: DocumentId): KindRow => ({ kind: "documents", row: { tableNumber: 1, id, ts: 5, value: "{}", prevTs: null } });
    await expectSnapshotInvalid(mergeWithoutChanges([basePart(0, [document(second!), document(first!)])]), "out of dump order");
    await expectSnapshotInvalid(mergeWithoutChanges([basePart(0, [document(second!)]), basePart(1, [document(first!)])]), "out of dump order");
    // The same id twice is out of order too (keys strictly increase).
    await expectSnapshotInvalid(mergeWithoutChanges([basePart(0, [document(first!)]), basePart(1, [document(first!)])]), "out of dump order");
  });

  it("refuses a base part that holds index entries before documents (SNAPSHOT_INVALID)", async () => {
    const random = new SeededRandom(12);
    const id = newDocumentId(1, random);
    const kindsOutOfTurn = basePart(0, [
      { kind: "indexEntries", row: { indexId: 1, key: Uint8Array.of(1), ts: 5, docId: id } },
      { kind: "documents", row: { tableNumber: 1, id, ts: 5, value: "{}", prevTs: null } },
    ]);
    await expectSnapshotInvalid(mergeWithoutChanges([kindsOutOfTurn]), "out of dump order");
  });

  it("refuses changes whose documents are not in id order (INTERNAL)", async () => {
    const random = new SeededRandom(14);
    const [first, second] = [newDocumentId(1, random), newDocumentId(1, random)].sort(compareStrings);
    const changes = fakeChangesCursor([
      {
        kind: "documents",
        rows: [
          { tableNumber: 1, id: second!, ts: BASE_TS + 10, value: "{}", prevTs: null },
          { tableNumber: 1, id: first!, ts: BASE_TS + 10, value: "{}", prevTs: null },
        ],
      },
    ]);
    const merged = new MergedDump(replayParts([]), changes, () => 0);
    const error = await rejected(drainMerged(merged));
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe("INTERNAL");
  });

  it("refuses a base part whose header counts differ from its records (SNAPSHOT_INVALID)", async () => {
    const random = new SeededRandom(15);
    const [first, second] = [newDocumentId(1, random), newDocumentId(1, random)].sort(compareStrings);
    const rows: KindRow[] = [
      { kind: "documents", row: { tableNumber: 1, id: first!, ts: 5, value: "{}", prevTs: null } },
      { kind: "documents", row: { tableNumber: 1, id: second!, ts: 5, value: "{}", prevTs: null } },
      { kind: "receipts", row: { clientId: "phone", seq: 1, ts: 5, result: "1", route: null } },
    ];
    // Too few and too many of a kind, a count moved to another kind, and a lie in a part that is not the last.
    for (const counts of [{ documents: 1 }, { documents: 3 }, { documents: 1, indexEntries: 1 }, { receipts: 0 }]) {
      await expectSnapshotInvalid(mergeWithoutChanges([basePart(0, rows, counts)]), "record counts differ");
    }
    const later = { kind: "receipts", row: { clientId: "phone", seq: 2, ts: 5, result: "2", route: null } } as const;
    await expectSnapshotInvalid(mergeWithoutChanges([basePart(0, rows, { indexEntries: 2 }), basePart(1, [later])]), "record counts differ");
    // The same parts with honest headers merge.
    expect(rowsOfMerged(await mergeWithoutChanges([basePart(0, rows), basePart(1, [later])]), "honest").receipts).toHaveLength(2);
  });

  it("refuses a base part whose payload is not records (SNAPSHOT_INVALID)", async () => {
    const random = new SeededRandom(16);
    const id = newDocumentId(1, random);
    const valid = basePart(0, [{ kind: "documents", row: { tableNumber: 1, id, ts: 5, value: "{}", prevTs: null } }]).payload;
    const none = { documents: 0, indexEntries: 0, receipts: 0 };
    // An unknown tag, alone and after a valid record.
    await expectSnapshotInvalid(mergeWithoutChanges([rawPart(0, Buffer.of(0x09), none)]), "payload is malformed");
    await expectSnapshotInvalid(mergeWithoutChanges([rawPart(0, Buffer.concat([valid, Buffer.of(0x09)]), { ...none, documents: 1 })]), "payload is malformed");
    // A record cut short, and a presence flag that is neither 0 nor 1.
    await expectSnapshotInvalid(mergeWithoutChanges([rawPart(0, valid.subarray(0, valid.length - 1), { ...none, documents: 1 })]), "payload is malformed");
    const badFlag = Buffer.from(valid);
    badFlag[badFlag.length - 4] = 0x07; // value "{}": [flag, length 2, "{", "}"]
    await expectSnapshotInvalid(mergeWithoutChanges([rawPart(0, badFlag, { ...none, documents: 1 })]), "payload is malformed");
  });

  it("close() mid-way ends the base's iterator and later reads fail with LOCAL_CLOSED", async () => {
    const random = new SeededRandom(13);
    const id = newDocumentId(1, random);
    const document: DocumentRevision = { tableNumber: 1, id, ts: 5, value: "{}", prevTs: null };
    let baseFinished = false;
    let basePartsYielded = 0;
    async function* base(): AsyncGenerator<EncodedSnapshotPayload> {
      try {
        for (const part of [
          basePart(0, [{ kind: "documents", row: document }]),
          basePart(1, [{ kind: "indexEntries", row: { indexId: 1, key: Uint8Array.of(1), ts: 5, docId: id } }]),
          basePart(2, [{ kind: "receipts", row: { clientId: "phone", seq: 1, ts: 5, result: "1", route: null } }]),
        ]) {
          await Promise.resolve();
          basePartsYielded++;
          yield part;
        }
      } finally {
        baseFinished = true;
      }
    }
    const changes = stores.open(dirs.file());
    const changeCursor = await changes.openDumpCursor({ includeRemovals: true });
    const merged = new MergedDump(base(), changeCursor, (clientId, owner) => changes.receiptFloor(clientId, owner));
    // The documents come once the base shows its next kind: the base is suspended mid-way.
    // No change touched the document: it comes as the base's record, still encoded.
    const first = await merged.next();
    expect(first).not.toBeNull();
    expect(first!.kind).toBe("documents");
    expect("encoded" in first!).toBe(true);
    expect(rowsOfMerged([first!], "first chunk").documents).toEqual([document]);
    expect(basePartsYielded).toBe(2);
    expect(baseFinished).toBe(false);
    merged.close();
    merged.close(); // idempotent
    // The base's return() runs its finally asynchronously.
    await new Promise((resolve) => setImmediate(resolve));
    expect(baseFinished).toBe(true);
    expect(basePartsYielded).toBe(2);
    const error = await rejected(merged.next());
    expect(error).toBeInstanceOf(CairnError);
    expect(error.code).toBe("LOCAL_CLOSED");
    // The changes' cursor is closed with it.
    expect(() => changeCursor.next()).toThrow(expect.objectContaining({ code: "LOCAL_CLOSED" }));
  });
});
