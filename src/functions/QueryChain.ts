import { CairnError, QUERY_COLLECT_ROWS_MAX, QUERY_FILTER_SCAN_ROWS_MAX, QUERY_PAGE_ITEMS_MAX, QUERY_PAGE_SPLIT_ROWS_MAX } from "../base/index.js";
import { compareBytes, indexRange, successorKey } from "../model/index.js";
import type { IndexInfo, TableInfo } from "./catalog.js";
import type { DiffableCapture } from "./DiffableRead.js";
import type { DocumentObject } from "./documents.js";
import { documentIdRange, idKeyBytes } from "./documentIdRange.js";
import { documentPredicate, type DocumentPredicate, type FilterBuilder, type FilterExpression } from "./FilterBuilder.js";
import { IndexRangeBuilder } from "./IndexRangeBuilder.js";
import { decodeCursor, encodeCursor } from "./paginationCursor.js";
import type { PendingRow } from "./PendingWrites.js";
import { laneOfScan } from "./routing.js";
import { SearchFilterBuilder, SearchQuery } from "./SearchQuery.js";
import type { SnapshotReads } from "./SnapshotReads.js";

/**
 * One page's request. Without `endCursor`: the first `numItems` rows after `cursor` (null:
 * from the start of the range). With `endCursor` (a continueCursor of the same query): a
 * pinned page, every row after `cursor` up to and including the `endCursor` position
 * however many there are now. Pinned pages partition the range: a row inserted anywhere
 * in it lands in exactly one of them (how usePaginatedQuery keeps loaded pages gapless
 * under inserts). A pinned page that grew is split rather than failing (see `splitCursor`).
 */
export interface PaginationOptions {
  readonly cursor: string | null;
  readonly numItems: number;
  readonly endCursor?: string | null;
}

/**
 * SplitRecommended: the pinned page holds every row of its range, more than
 * `splitRowsOf(numItems)`. SplitRequired: its range holds more than QUERY_PAGE_ITEMS_MAX
 * rows; `page` is only the first QUERY_PAGE_ITEMS_MAX of them (partial, not to be shown as
 * the page).
 */
export type PageStatus = "SplitRecommended" | "SplitRequired";

export interface PaginationResult<Document> {
  readonly page: Document[];
  readonly isDone: boolean;
  readonly continueCursor: string;
  /**
   * Only on a pinned page that should be split (with `pageStatus`): the position after the
   * middle row of `page`. The pages [cursor, splitCursor] and [splitCursor, endCursor]
   * together hold exactly this page's rows, each about half of them.
   */
  readonly splitCursor?: string;
  readonly pageStatus?: PageStatus;
}

export type Order = "asc" | "desc";

/**
 * `ctx.db.query(table)`: choose an index and a range (default: `by_creation`, all of
 * it), an order (default ascending), filters (`filter`, any number: all must pass), then
 * read with `take`, `first`, `unique`, `collect` (at most QUERY_COLLECT_ROWS_MAX rows,
 * else FUNCTION_LIMIT_EXCEEDED: paginate) or `paginate`. Each read records exactly the
 * index range it covered — with a filter, every row it read to find the ones that pass,
 * so a write past them never re-runs the query and one among them always does.
 */
/** Rows a filtered read asks the store for at least per batch (more when it needs more). */
const FILTER_BATCH_ROWS_MIN = 64;

export class QueryChain<Document = DocumentObject> {
  private index: IndexInfo;
  private builder: IndexRangeBuilder | null = null;
  private indexChosen = false;
  private direction: Order = "asc";
  private orderChosen = false;
  private readonly predicates: DocumentPredicate[] = [];

  constructor(
    private readonly reads: SnapshotReads,
    private readonly table: TableInfo,
  ) {
    this.index = table.indexes.get("by_creation")!;
  }

  withIndex(name: string, range?: (q: IndexRangeBuilder) => IndexRangeBuilder): this {
    if (this.indexChosen) throw misuse("withIndex may be called once per query");
    if (this.orderChosen) throw misuse("withIndex comes before order");
    const index = typeof name === "string" ? this.table.indexes.get(name) : undefined;
    if (index === undefined) {
      throw new CairnError("INVALID_ARGUMENT", `table ${this.table.name} has no index ${JSON.stringify(name)} (it has ${[...this.table.indexes.keys()].join(", ")})`);
    }
    if (index.kind === "search") throw misuse(`${this.table.name}.${index.name} is a search index: query it with withSearchIndex("${index.name}", q => q.search(…))`);
    this.index = index;
    this.indexChosen = true;
    const builder = new IndexRangeBuilder(this.table.name, index);
    if (range !== undefined) {
      if (typeof range !== "function") throw misuse("withIndex's range must be a function q => q.eq(…)…");
      if (range(builder) !== builder) throw misuse("withIndex's range function must return the q it was given");
    }
    this.builder = builder;
    return this;
  }

  /**
   * A full-text search of the table's search index `name` (SearchQuery.ts): results by
   * relevance, read with take, first or collect. Not with withIndex, order or filter.
   */
  withSearchIndex(name: string, build: (q: SearchFilterBuilder) => SearchFilterBuilder): SearchQuery<Document> {
    if (this.indexChosen || this.orderChosen || this.predicates.length > 0) throw misuse("withSearchIndex comes instead of withIndex, order and filter");
    const index = typeof name === "string" ? this.table.indexes.get(name) : undefined;
    if (index === undefined || index.kind !== "search") {
      const searchIndexes = [...this.table.indexes.values()].filter((candidate) => candidate.kind === "search").map((candidate) => candidate.name);
      throw new CairnError("INVALID_ARGUMENT", `table ${this.table.name} has no search index ${JSON.stringify(name)} (it has ${searchIndexes.length === 0 ? "none" : searchIndexes.join(", ")})`);
    }
    if (index.state !== "ready") {
      throw new CairnError("INDEX_NOT_READY", `search index ${this.table.name}.${index.name} is still being backfilled; it answers once every existing document is indexed`, {
        details: { table: this.table.name, index: index.name },
      });
    }
    const filters = new SearchFilterBuilder(this.table.name, index);
    if (typeof build !== "function" || build(filters) !== filters) throw misuse("withSearchIndex's second argument must be a function q => q.search(…)… that returns the q it was given");
    return new SearchQuery<Document>(this.reads, this.table, index, filters);
  }

  order(order: Order): this {
    if (order !== "asc" && order !== "desc") throw misuse(`order must be "asc" or "desc", not ${JSON.stringify(order)}`);
    if (this.orderChosen) throw misuse("order may be called once per query");
    this.direction = order;
    this.orderChosen = true;
    return this;
  }

  /** Keeps only the documents for which the expression is true (FilterBuilder.ts); several filters must all pass. */
  filter(build: (q: FilterBuilder) => FilterExpression): this {
    this.predicates.push(documentPredicate(build));
    return this;
  }

  async take(count: number): Promise<Document[]> {
    checkCount(count, QUERY_COLLECT_ROWS_MAX, "take");
    const { rows, complete } = this.read(count);
    const documents = rows.map((row) => row.document as Document);
    return this.guarded(documents, () => ({ shape: "array", ...this.range(), limit: count, beyondLimit: "truncate", rows, complete, page: null }));
  }

  async first(): Promise<Document | null> {
    return (this.read(1).rows[0]?.document as Document | undefined) ?? null;
  }

  /** The one row in range, or null; QUERY_NOT_UNIQUE if there are more. */
  async unique(): Promise<Document | null> {
    const { rows } = this.read(2);
    if (rows.length > 1) {
      throw new CairnError("QUERY_NOT_UNIQUE", `unique() found more than one document in ${this.table.name}.${this.index.name} (${rows[0]!.document._id}, ${rows[1]!.document._id}, …)`);
    }
    return (rows[0]?.document as Document | undefined) ?? null;
  }

  async collect(): Promise<Document[]> {
    const { rows } = this.read(QUERY_COLLECT_ROWS_MAX + 1);
    if (rows.length > QUERY_COLLECT_ROWS_MAX) {
      throw new CairnError("FUNCTION_LIMIT_EXCEEDED", `collect() on ${this.table.name}.${this.index.name} found more than ${QUERY_COLLECT_ROWS_MAX} documents; use paginate or take`, {
        details: { limit: QUERY_COLLECT_ROWS_MAX },
      });
    }
    const documents = rows.map((row) => row.document as Document);
    // All of the range's rows: past the bound a run would fail, so a diff that grows past it runs again.
    return this.guarded(documents, () => ({ shape: "array", ...this.range(), limit: QUERY_COLLECT_ROWS_MAX, beyondLimit: "rerun", rows, complete: true, page: null }));
  }

  /**
   * The handler's view of a result: as it is, or behind the run's ResultGuard (a
   * subscription that takes diffs) with what a diff needs to know of the read. Only
   * unfiltered reads: a filtered one examined rows it does not return.
   */
  private guarded<T extends object>(result: T, capture: () => Omit<DiffableCapture, "table" | "index" | "order">): T {
    const guard = this.reads.guard;
    if (guard === null || this.predicates.length > 0) return result;
    return guard.wrap(result, { ...capture(), table: this.table, index: this.index, order: this.direction });
  }

  /**
   * A page of the range in order. Its `continueCursor` is the key of its last row (or the
   * end of the range: then `isDone`), or, for a pinned page, its `endCursor`; `isDone`
   * for a pinned page means it holds every row through its endCursor and that was the end
   * of the range. INVALID_ARGUMENT for a cursor `paginate` did not make for this index and
   * order, and for an `endCursor` before `cursor`.
   */
  async paginate(options: PaginationOptions): Promise<PaginationResult<Document>> {
    if (typeof options !== "object" || options === null) throw misuse("paginate takes { cursor, numItems, endCursor? }");
    checkCount(options.numItems, QUERY_PAGE_ITEMS_MAX, "paginate's numItems", 1);
    const position = { indexId: this.index.id, order: this.direction };
    // undefined: from the start; null: the range was already done.
    const afterKey = options.cursor === null ? undefined : decodeCursor(options.cursor, position).afterKey;
    const pinned = options.endCursor !== undefined && options.endCursor !== null;
    // null: through the end of the range.
    const throughKey = pinned ? decodeCursor(options.endCursor, position).afterKey : null;
    if (pinned && this.isBefore(throughKey, afterKey)) throw cursorsReversed();
    const done = encodeCursor({ ...position, afterKey: null });
    const continueCursor = pinned ? encodeCursor({ ...position, afterKey: throughKey }) : done;
    if (afterKey === null) return { page: [], isDone: true, continueCursor: pinned ? continueCursor : options.cursor! };
    const { start, end } = this.pageRange(afterKey, throughKey);
    if (end !== null && compareBytes(start, end) >= 0) return { page: [], isDone: !pinned || throughKey === null, continueCursor };
    if (pinned) return this.pinnedPage(start, end, options.numItems, throughKey === null, continueCursor);
    const { rows, complete, resumeAfter } = this.scan(start, end, options.numItems, QUERY_FILTER_SCAN_ROWS_MAX);
    const page = rows.map((row) => row.document as Document);
    const result = { page, isDone: complete, continueCursor: complete ? done : encodeCursor({ ...position, afterKey: resumeAfter! }) };
    return this.guarded(result, () => ({ shape: "page", start, end, limit: options.numItems, beyondLimit: "truncate", rows, complete, page: { kind: "fromRows", ...position } }));
  }

  /**
   * The rows of a pinned page's range (`start`..`end`), at most QUERY_PAGE_ITEMS_MAX of
   * them: a page holding more than `splitRowsOf(numItems)` also gets a splitCursor, so a
   * client can replace it by two smaller ones before it outgrows what one read may return,
   * and one already past that gets its first rows, marked partial, and the splitCursor
   * among them to split its way out. Never fails for its size.
   */
  private pinnedPage(start: Uint8Array, end: Uint8Array | null, numItems: number, throughEnd: boolean, continueCursor: string): PaginationResult<Document> {
    const { rows } = this.scan(start, end, QUERY_PAGE_ITEMS_MAX + 1);
    const partial = rows.length > QUERY_PAGE_ITEMS_MAX;
    const kept = partial ? rows.slice(0, QUERY_PAGE_ITEMS_MAX) : rows;
    const page = kept.map((row) => row.document as Document);
    if (!partial && kept.length <= splitRowsOf(numItems)) {
      const result = { page, isDone: throughEnd, continueCursor };
      // Its range is fixed and read whole; grown past the split size, a run would add a splitCursor.
      const fixed = { kind: "fixed" as const, isDone: throughEnd, continueCursor };
      return this.guarded(result, () => ({ shape: "page", start, end, limit: splitRowsOf(numItems), beyondLimit: "rerun", rows: kept, complete: true, page: fixed }));
    }
    // More than splitRowsOf(numItems) ≥ 2 rows: both halves hold at least one.
    const middle = kept[Math.floor(kept.length / 2) - 1]!;
    const splitCursor = encodeCursor({ indexId: this.index.id, order: this.direction, afterKey: middle.key });
    return { page, isDone: !partial && throughEnd, continueCursor, splitCursor, pageStatus: partial ? "SplitRequired" : "SplitRecommended" };
  }

  /**
   * The query's range cut to the rows after `afterKey` (undefined: from its start) up to
   * and including `throughKey` (null: to its end), in the query's order.
   */
  private pageRange(afterKey: Uint8Array | undefined, throughKey: Uint8Array | null): { start: Uint8Array; end: Uint8Array | null } {
    let { start, end } = this.range();
    const ascending = this.direction === "asc";
    // Ascending pages move up from `start`; descending ones down from `end` (exclusive).
    const lowerBound = ascending ? afterKey && successorKey(afterKey) : throughKey;
    const upperBound = ascending ? throughKey && successorKey(throughKey) : afterKey;
    if (lowerBound != null && compareBytes(lowerBound, start) > 0) start = lowerBound;
    if (upperBound != null && (end === null || compareBytes(upperBound, end) < 0)) end = upperBound;
    return { start, end };
  }

  /** Whether position `through` (a key; null: the end) comes before position `after` (a key; undefined: the start; null: the end) in the query's order. */
  private isBefore(through: Uint8Array | null, after: Uint8Array | null | undefined): boolean {
    if (after === undefined) return false;
    if (after === null) return through !== null;
    if (through === null) return false;
    const order = compareBytes(through, after);
    return this.direction === "asc" ? order < 0 : order > 0;
  }

  private read(limit: number) {
    const { start, end } = this.range();
    return this.scan(start, end, limit);
  }

  /**
   * The first `limit` rows of [start, end) in the query's order that pass its filters.
   * Without a filter, one scan. With one, scans in batches — each recording the range it
   * read, together exactly the rows examined — while fewer have passed, until the range
   * ends (`complete`) or `examinedMax` rows were read. `resumeAfter`: where the next page
   * starts when not complete (the last row returned, or the last one read if the
   * examined rows ran out first).
   */
  private scan(start: Uint8Array, end: Uint8Array | null, limit: number, examinedMax = Number.POSITIVE_INFINITY): { rows: PendingRow[]; complete: boolean; resumeAfter: Uint8Array | null } {
    const lane = this.lane();
    if (this.predicates.length === 0) {
      const { rows, complete } = this.reads.scan(this.table, this.index, start, end, this.direction, limit, lane);
      return { rows: [...rows], complete, resumeAfter: rows.at(-1)?.key ?? null };
    }
    if (limit === 0) return { rows: [], complete: false, resumeAfter: null };
    const passed: PendingRow[] = [];
    let examined = 0;
    let lastRead: Uint8Array | null = null;
    for (;;) {
      const batch = Math.min(Math.max(2 * (limit - passed.length), FILTER_BATCH_ROWS_MIN), examinedMax - examined);
      if (batch <= 0) return { rows: passed, complete: false, resumeAfter: lastRead };
      const scanned = this.reads.scan(this.table, this.index, start, end, this.direction, batch, lane);
      for (const row of scanned.rows) {
        examined++;
        lastRead = row.key;
        if (!this.predicates.every((passes) => passes(row.document as Record<string, unknown>))) continue;
        passed.push(row);
        if (passed.length === limit) return { rows: passed, complete: false, resumeAfter: row.key };
      }
      if (scanned.complete || lastRead === null) return { rows: passed, complete: true, resumeAfter: null };
      if (this.direction === "asc") start = successorKey(lastRead);
      else end = lastRead;
    }
  }

  /** The one lane this query's range can hold documents in, or null for all of them. */
  private lane(): number | null {
    return laneOfScan(this.table, this.index, this.builder?.bounds() ?? { equal: [] }, this.reads.laneCount);
  }

  private range(): { start: Uint8Array; end: Uint8Array | null } {
    const bounds = this.builder?.bounds() ?? { equal: [] };
    if (this.index.kind === "entries") return indexRange(this.index.id, bounds);
    const ids = documentIdRange(this.table.number, bounds);
    return { start: idKeyBytes(ids.start), end: idKeyBytes(ids.end) };
  }
}

function checkCount(count: unknown, max: number, what: string, min = 0): asserts count is number {
  if (typeof count !== "number" || !Number.isInteger(count) || count < min || count > max) {
    throw new CairnError("INVALID_ARGUMENT", `${what} must be an integer in ${min}..${max}, not ${String(count)}`);
  }
}

function cursorsReversed(): CairnError {
  return new CairnError("INVALID_ARGUMENT", "invalid pagination cursor: endCursor lies before cursor");
}

/** How many rows a pinned page of `numItems` may hold before a split is recommended. */
export function splitRowsOf(numItems: number): number {
  return Math.min(2 * numItems, QUERY_PAGE_SPLIT_ROWS_MAX);
}

function misuse(message: string): CairnError {
  return new CairnError("INVALID_ARGUMENT", `query: ${message}`);
}
