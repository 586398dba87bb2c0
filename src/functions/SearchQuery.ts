import { CairnError, SEARCH_POSTINGS_PER_TERM_MAX, SEARCH_QUERY_TERMS_MAX, SEARCH_RESULTS_MAX } from "../base/index.js";
import { compareValues, indexRange, validateValue, type Value } from "../model/index.js";
import type { IndexInfo, TableInfo } from "./catalog.js";
import { fieldAt, type DocumentObject } from "./documents.js";
import { laneOfValue } from "./routing.js";
import { termFrequencies, termsOf } from "./searchTerms.js";
import type { SnapshotReads } from "./SnapshotReads.js";

/**
 * `ctx.db.query(table).withSearchIndex(name, q => q.search("body", text).eq("channel", c))`,
 * then `take(n)`, `first()` or `collect()`: the documents whose search field holds any of
 * the text's terms (searchTerms.ts), with every given filter field equal, most relevant
 * first (BM25: rarer terms, more occurrences, shorter texts rank higher; ties newest
 * first).
 *
 * How it reads: the index holds one entry per distinct term of each document, keyed
 * [term, ...filter values, -frequency, _id]. Each term of the query reads its range —
 * narrowed by the filter values given for the index's first filter fields, most frequent
 * occurrences first, at most SEARCH_POSTINGS_PER_TERM_MAX of them — and records it: a
 * live search re-runs when a document that has (or had) one of its terms under its
 * filters is written, and for no other write. The scores are computed from what was read
 * (a term's document frequency is what its range held, capped at the postings read; the
 * collection is estimated as twice the documents that matched any term, since counting
 * it would make every search re-run on every insert — which keeps BM25's weighing of
 * rare against common terms among the documents that compete).
 */
export class SearchFilterBuilder {
  /** @internal */ text: string | null = null;
  /** @internal */ readonly equal = new Map<string, Value | undefined>();

  constructor(
    private readonly table: string,
    private readonly index: IndexInfo,
  ) {}

  /** Searches `field` (the index's search field) for the terms of `text`. */
  search(field: string, text: string): this {
    const search = this.index.search!;
    if (this.text !== null) throw this.misuse("search is given once");
    if (field !== search.searchField) throw this.misuse(`it searches ${search.searchField}, not ${JSON.stringify(field)}`);
    if (typeof text !== "string") throw this.misuse("search takes a string of text");
    this.text = text;
    return this;
  }

  /** Only documents whose filter field `field` equals `value`. */
  eq(field: string, value: Value | undefined): this {
    const search = this.index.search!;
    if (!search.filterFields.includes(field)) throw this.misuse(`it filters on ${search.filterFields.length === 0 ? "no field" : search.filterFields.join(", ")}, not ${JSON.stringify(field)}`);
    if (this.equal.has(field)) throw this.misuse(`eq("${field}") is given twice`);
    if (value !== undefined) validateValue(value);
    this.equal.set(field, value);
    return this;
  }

  private misuse(message: string): CairnError {
    return new CairnError("INVALID_ARGUMENT", `search index ${this.table}.${this.index.name}: ${message}`);
  }
}

/** BM25's usual constants. */
const K1 = 1.2;
const B = 0.75;

export class SearchQuery<Document = DocumentObject> {
  constructor(
    private readonly reads: SnapshotReads,
    private readonly table: TableInfo,
    private readonly index: IndexInfo,
    private readonly filters: SearchFilterBuilder,
  ) {
    if (filters.text === null) throw new CairnError("INVALID_ARGUMENT", `search index ${table.name}.${index.name}: the query needs q.search("${index.search!.searchField}", text)`);
  }

  async take(count: number): Promise<Document[]> {
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0 || count > SEARCH_RESULTS_MAX) {
      throw new CairnError("INVALID_ARGUMENT", `take must be an integer in 0..${SEARCH_RESULTS_MAX}, not ${String(count)}`);
    }
    return this.run(count) as Document[];
  }

  async first(): Promise<Document | null> {
    return (this.run(1)[0] as Document | undefined) ?? null;
  }

  /** Every match, at most SEARCH_RESULTS_MAX (the most relevant ones). */
  async collect(): Promise<Document[]> {
    return this.run(SEARCH_RESULTS_MAX) as Document[];
  }

  private run(limit: number): DocumentObject[] {
    const { searchField, filterFields } = this.index.search!;
    const terms = [...new Set(termsOf(this.filters.text!))];
    if (terms.length > SEARCH_QUERY_TERMS_MAX) {
      throw new CairnError("INVALID_ARGUMENT", `a search takes at most ${SEARCH_QUERY_TERMS_MAX} terms, not ${terms.length}`, { details: { terms: terms.length } });
    }
    if (terms.length === 0 || limit === 0) return [];
    // The filter values that narrow every term's range: the index's first filter fields, as far as they are given.
    const prefix: (Value | undefined)[] = [];
    for (const field of filterFields) {
      if (!this.filters.equal.has(field)) break;
      prefix.push(this.filters.equal.get(field));
    }
    const rest = [...this.filters.equal].filter(([field]) => filterFields.indexOf(field) >= prefix.length);
    const shardKey = this.table.shardKey;
    const lane = shardKey !== null && this.filters.equal.has(shardKey) ? laneOfValue(this.filters.equal.get(shardKey), this.reads.laneCount) : null;
    const candidates = new Map<string, { document: DocumentObject; frequencies: Map<string, number>; length: number }>();
    const documentFrequency = new Map<string, number>();
    for (const term of terms) {
      const range = indexRange(this.index.id, { equal: [term, ...prefix] });
      const { rows } = this.reads.scan(this.table, this.index, range.start, range.end, "asc", SEARCH_POSTINGS_PER_TERM_MAX, lane);
      documentFrequency.set(term, rows.length);
      for (const { document } of rows) {
        if (candidates.has(document._id)) continue;
        if (!rest.every(([field, value]) => compareValues(fieldAt(document, field) as Value, value as Value) === 0)) continue;
        const text = fieldAt(document, searchField);
        const { frequencies, length } = termFrequencies(typeof text === "string" ? text : "");
        candidates.set(document._id, { document, frequencies, length });
      }
    }
    if (candidates.size === 0) return [];
    let totalLength = 0;
    for (const candidate of candidates.values()) totalLength += candidate.length;
    const averageLength = Math.max(1, totalLength / candidates.size);
    const collection = 2 * Math.max(candidates.size, ...documentFrequency.values());
    const scored = [...candidates.values()].map(({ document, frequencies, length }) => {
      let score = 0;
      for (const term of terms) {
        const frequency = frequencies.get(term);
        if (frequency === undefined) continue;
        const df = documentFrequency.get(term)!;
        const idf = Math.log(1 + (collection - df + 0.5) / (df + 0.5));
        score += (idf * (frequency * (K1 + 1))) / (frequency + K1 * (1 - B + (B * length) / averageLength));
      }
      return { document, score };
    });
    scored.sort((left, right) => right.score - left.score || right.document._creationTime - left.document._creationTime || (left.document._id < right.document._id ? -1 : 1));
    return scored.slice(0, limit).map(({ document }) => document);
  }
}
