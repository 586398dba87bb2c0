import type { Random } from "../../src/base/random.js";
import { randomInt } from "../../src/base/random.js";
import type { DocumentVersion } from "../../src/local/index.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";
import type { DocumentWrite, IndexWrite, ReadSet, ReceiptWrite, WriteUnit } from "../../src/shard/WriteUnit.js";
import { BENCH_INDEX_ID, BENCH_TABLE_NUMBER } from "./smallDocuments.js";

/**
 * The open-loop benchmark's documents and its mutation, shaped like a typical
 * functions-layer mutation rather than a blind insert:
 *
 * - Documents are small lossless JSON (`{"label","n","score","createdAt"}`, ~75 bytes) in
 *   table 1, each with one entry in index 1 keyed by (score, createdAt, id).
 * - A mutation reads one existing document, chosen uniformly among those known to be
 *   committed, at the shard's read ts. In UPDATE_FRACTION of mutations it then updates
 *   that document (prevTs = the ts of the version read; a new random score, so its index
 *   entry moves: the old key removed with docId null, the new key written); otherwise it
 *   inserts a new document with its index entry. Both carry an OCC read set (the document
 *   read: a write to it committed or queued after the read ts is a WRITE_CONFLICT) and a
 *   receipt (clientId, seq, result) for one of RECEIPT_CLIENTS clients.
 * - The old index key is derived from the document as read, as the functions layer
 *   derives it, so an update removes exactly the entry its read version has.
 */
export const UPDATE_FRACTION = 0.9;
/** Distinct receipt clients; each numbers its mutations 0, 1, 2, … */
export const RECEIPT_CLIENTS = 1_000;
const SCORE_MAX = 1_000_000;

interface BenchDocument {
  readonly label: string;
  readonly n: number;
  readonly score: number;
  readonly createdAt: number;
}

export interface PlannedMutation {
  readonly kind: "update" | "insert";
  readonly unit: WriteUnit;
  /** The new document's id, for an insert (known to the benchmark once committed). */
  readonly insertedId: DocumentId | null;
}

/** Read of the shard's local state at a timestamp (the engine's local store). */
export type ReadDocument = (id: DocumentId, ts: number) => DocumentVersion | null;

/** `count` new documents numbered from `firstN`, each with its index entry, created at `createdAt`. */
export function preloadUnit(random: Random, firstN: number, count: number, createdAt: number, readTs: number): { unit: WriteUnit; ids: DocumentId[] } {
  const documents: DocumentWrite[] = [];
  const indexWrites: IndexWrite[] = [];
  const ids: DocumentId[] = [];
  for (let offset = 0; offset < count; offset++) {
    const id = newDocumentId(BENCH_TABLE_NUMBER, random);
    const document: BenchDocument = { label: "preload", n: firstN + offset, score: randomInt(random, SCORE_MAX), createdAt };
    documents.push({ tableNumber: BENCH_TABLE_NUMBER, id, value: JSON.stringify(document), prevTs: null });
    indexWrites.push({ indexId: BENCH_INDEX_ID, key: indexKeyOf(id, document), docId: id });
    ids.push(id);
  }
  return { unit: { readTs, documents, indexWrites }, ids };
}

export class OpenLoopMutations {
  private readonly receiptSeqs = new Array<number>(RECEIPT_CLIENTS).fill(0);
  private nextN = 0;

  /** `ids`: the committed documents; the benchmark adds inserted ones through `remember`. */
  constructor(
    private readonly random: Random,
    private readonly ids: DocumentId[],
  ) {}

  get documents(): number {
    return this.ids.length;
  }

  /** An inserted document, once committed, becomes a candidate for later reads. */
  remember(id: DocumentId): void {
    this.ids.push(id);
  }

  /** Reads a random document at `readTs` and plans the mutation; throws if it is missing. */
  next(readTs: number, read: ReadDocument): PlannedMutation {
    const readId = this.ids[randomInt(this.random, this.ids.length)]!;
    const version = read(readId, readTs);
    if (version === null) throw new Error(`document ${readId} is missing at ts ${readTs}`);
    const n = this.nextN++;
    const receipt = this.receipt(readId);
    // The document read is the read set: a write to it after readTs fails the commit.
    const readSet: ReadSet = { documents: [readId] };
    if (this.random.float() < UPDATE_FRACTION) {
      const before = JSON.parse(version.value) as BenchDocument;
      const after: BenchDocument = { ...before, label: "update", n, score: randomInt(this.random, SCORE_MAX) };
      const unit: WriteUnit = {
        readTs,
        documents: [{ tableNumber: BENCH_TABLE_NUMBER, id: readId, value: JSON.stringify(after), prevTs: version.ts }],
        indexWrites: [
          { indexId: BENCH_INDEX_ID, key: indexKeyOf(readId, before), docId: null },
          { indexId: BENCH_INDEX_ID, key: indexKeyOf(readId, after), docId: readId },
        ],
        receipt,
        readSet,
      };
      return { kind: "update", unit, insertedId: null };
    }
    const id = newDocumentId(BENCH_TABLE_NUMBER, this.random);
    const document: BenchDocument = { label: "insert", n, score: randomInt(this.random, SCORE_MAX), createdAt: Date.now() };
    const unit: WriteUnit = {
      readTs,
      documents: [{ tableNumber: BENCH_TABLE_NUMBER, id, value: JSON.stringify(document), prevTs: null }],
      indexWrites: [{ indexId: BENCH_INDEX_ID, key: indexKeyOf(id, document), docId: id }],
      receipt,
      readSet,
    };
    return { kind: "insert", unit, insertedId: id };
  }

  private receipt(readId: DocumentId): ReceiptWrite {
    const client = randomInt(this.random, RECEIPT_CLIENTS);
    const seq = this.receiptSeqs[client]!;
    this.receiptSeqs[client] = seq + 1;
    return { clientId: `bench-client-${client}`, seq, result: JSON.stringify({ read: readId }), route: null };
  }
}

function indexKeyOf(id: DocumentId, document: BenchDocument): Uint8Array {
  return documentIndexKey([document.score], document.createdAt, id);
}
