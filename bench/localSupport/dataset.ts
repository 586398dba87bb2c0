import type { ApplyBatch, DumpChunk } from "../../src/local/index.js";
import { randomInt, type SeededRandom } from "../../src/base/random.js";
import { type DocumentId, encodeDocumentId, newDocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";
import type { DocumentRevision, IndexUpdate } from "../../src/model/Revision.js";

/**
 * The benchmark's data: "users" of ~190 bytes of JSON, each with two index entries, by
 * score (a number) and by name (a string), keyed as the functions layer keys them
 * (field value, creation time, id).
 *
 * A preloaded store of N users comes as a dump, in dump order (documents by id, entries
 * by key), without holding N of anything in memory: user j has the id whose random part
 * starts with j (so ids ascend with j) and ranks r1(j) = j·P1 mod N, r2(j) = j·P2 mod N
 * for its score and name, so walking ranks 0..N-1 walks each index in key order while
 * scores and names stay uncorrelated with ids.
 */
export const TABLE_NUMBER = 1;
export const BY_SCORE = 1;
export const BY_NAME = 2;
/** The ts of every preloaded row; incremental batches follow at PRELOAD_TS + 1 + n. */
export const PRELOAD_TS = 1_000;
/** Large primes: coprime to any store size that is not their multiple. */
const P1 = 1_000_003n;
const P2 = 2_000_003n;

export class PreloadedUsers {
  private readonly inverse1: bigint;
  private readonly inverse2: bigint;

  constructor(readonly count: number) {
    this.inverse1 = modularInverse(P1, BigInt(count));
    this.inverse2 = modularInverse(P2, BigInt(count));
  }

  id(j: number): DocumentId {
    const random = new Uint8Array(16);
    new DataView(random.buffer).setUint32(0, j);
    new DataView(random.buffer).setUint32(4, Math.imul(j, 2_654_435_761) >>> 0);
    return encodeDocumentId({ tableNumber: TABLE_NUMBER, random });
  }

  scoreRank(j: number): number {
    return Number((BigInt(j) * P1) % BigInt(this.count));
  }

  nameRank(j: number): number {
    return Number((BigInt(j) * P2) % BigInt(this.count));
  }

  /** Keys user j holds in the preloaded state. */
  keys(j: number): { byScore: Uint8Array; byName: Uint8Array } {
    const id = this.id(j);
    return {
      byScore: documentIndexKey([this.scoreRank(j)], PRELOAD_TS, id),
      byName: documentIndexKey([nameOf(this.nameRank(j))], PRELOAD_TS, id),
    };
  }

  /** The whole preloaded state as dump chunks of `rowsPerChunk` rows, in dump order. */
  *dump(rowsPerChunk = 1_000): Generator<DumpChunk> {
    const n = BigInt(this.count);
    yield* inChunks(this.count, rowsPerChunk, (j) => {
      const row: DocumentRevision = {
        tableNumber: TABLE_NUMBER,
        id: this.id(j),
        ts: PRELOAD_TS,
        value: userValue(this.scoreRank(j), nameOf(this.nameRank(j)), j),
        prevTs: null,
      };
      return row;
    }, "documents");
    yield* inChunks(this.count, rowsPerChunk, (rank) => {
      const j = Number((BigInt(rank) * this.inverse1) % n);
      const id = this.id(j);
      const row: IndexUpdate = { indexId: BY_SCORE, key: documentIndexKey([rank], PRELOAD_TS, id), ts: PRELOAD_TS, docId: id };
      return row;
    }, "indexEntries");
    yield* inChunks(this.count, rowsPerChunk, (rank) => {
      const j = Number((BigInt(rank) * this.inverse2) % n);
      const id = this.id(j);
      const row: IndexUpdate = { indexId: BY_NAME, key: documentIndexKey([nameOf(rank)], PRELOAD_TS, id), ts: PRELOAD_TS, docId: id };
      return row;
    }, "indexEntries");
  }
}

/**
 * A stream of segments' worth of writes on top of the preloaded users: each batch of
 * `documents` rows inserts new users (random ids, random score and name) and updates a
 * fraction of preloaded ones (new score and name: the old entries removed, new ones
 * written), each preloaded user at most once.
 */
export class IncrementalWrites {
  private nextBatch: number;
  private nextUpdated: number;

  constructor(
    private readonly users: PreloadedUsers,
    private readonly random: SeededRandom,
    private readonly documents: number,
    private readonly updateFraction: number,
    /** Where a stream continues another on the same store: its next batch number and updated-user count. */
    from: { readonly batch: number; readonly updated: number } = { batch: 0, updated: 0 },
  ) {
    this.nextBatch = from.batch;
    this.nextUpdated = from.updated;
  }

  /** Where a stream that continues this one starts. */
  position(): { readonly batch: number; readonly updated: number } {
    return { batch: this.nextBatch, updated: this.nextUpdated };
  }

  /** Preloaded users updated so far (the first ones of a fixed permutation). */
  updatedUser(n: number): number {
    return Number((BigInt(n) * 7_000_003n) % BigInt(this.users.count));
  }

  batch(): ApplyBatch {
    const seqno = this.nextBatch++;
    const ts = PRELOAD_TS + 1 + seqno;
    const revisions: DocumentRevision[] = [];
    const indexUpdates: IndexUpdate[] = [];
    for (let n = 0; n < this.documents; n++) {
      const score = randomInt(this.random, 1_000_000_000);
      const name = nameOf(randomInt(this.random, 1_000_000_000));
      if (this.random.float() < this.updateFraction && this.nextUpdated < this.users.count) {
        const j = this.updatedUser(this.nextUpdated++);
        const id = this.users.id(j);
        const old = this.users.keys(j);
        revisions.push({ tableNumber: TABLE_NUMBER, id, ts, value: userValue(score, name, j), prevTs: PRELOAD_TS });
        indexUpdates.push({ indexId: BY_SCORE, key: old.byScore, ts, docId: null });
        indexUpdates.push({ indexId: BY_NAME, key: old.byName, ts, docId: null });
        indexUpdates.push({ indexId: BY_SCORE, key: documentIndexKey([score], PRELOAD_TS, id), ts, docId: id });
        indexUpdates.push({ indexId: BY_NAME, key: documentIndexKey([name], PRELOAD_TS, id), ts, docId: id });
      } else {
        const id = newDocumentId(TABLE_NUMBER, this.random);
        revisions.push({ tableNumber: TABLE_NUMBER, id, ts, value: userValue(score, name, seqno * this.documents + n), prevTs: null });
        indexUpdates.push({ indexId: BY_SCORE, key: documentIndexKey([score], ts, id), ts, docId: id });
        indexUpdates.push({ indexId: BY_NAME, key: documentIndexKey([name], ts, id), ts, docId: id });
      }
    }
    return { revisions, indexUpdates, receipts: [], meta: { appliedSeqno: seqno, epoch: 1, lastHash: `h${seqno}`, frontierTs: ts } };
  }
}

function nameOf(rank: number): string {
  return `user-${rank.toString().padStart(10, "0")}`;
}

/** ~190 bytes of JSON. */
function userValue(score: number, name: string, n: number): string {
  return JSON.stringify({
    name,
    score,
    email: `${name}@example.com`,
    city: ["Lisbon", "Osaka", "Nairobi", "Quito", "Tallinn"][n % 5],
    bio: "Enjoys long walks on the beach and databases that live in buckets.",
    active: n % 3 !== 0,
  });
}

function* inChunks<Row>(count: number, rowsPerChunk: number, row: (n: number) => Row, kind: DumpChunk["kind"]): Generator<DumpChunk> {
  for (let start = 0; start < count; start += rowsPerChunk) {
    const rows: Row[] = [];
    for (let n = start; n < Math.min(count, start + rowsPerChunk); n++) rows.push(row(n));
    yield { kind, rows } as DumpChunk;
  }
}

function modularInverse(value: bigint, modulus: bigint): bigint {
  let [oldR, r] = [value % modulus, modulus];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const quotient = oldR / r;
    [oldR, r] = [r, oldR - quotient * r];
    [oldS, s] = [s, oldS - quotient * s];
  }
  if (oldR !== 1n) throw new Error(`${value} has no inverse modulo ${modulus}`);
  return ((oldS % modulus) + modulus) % modulus;
}
