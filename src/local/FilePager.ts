/**
 * The file's side of a merged scan: rows of a key range in the SQLite file, fetched a
 * page at a time as the merge consumes them, each page starting right after the last
 * row of the previous one. The merge with the overlay decides which rows count; this
 * only walks the file in order.
 */
export interface PagerKeys<Key, Row> {
  /** The rows with start <= key < end (end null: unbounded), in `order`, at most `limit`. */
  readonly fetch: (start: Key, end: Key | null, limit: number) => Row[];
  readonly keyOf: (row: Row) => Key;
  /** The smallest key above `key`. */
  readonly after: (key: Key) => Key;
  /** Whether [start, end) holds no key. */
  readonly isEmpty: (start: Key, end: Key) => boolean;
}

export class FilePager<Key, Row> {
  private page: Row[] = [];
  private at = 0;
  private exhausted = false;

  constructor(
    private readonly keys: PagerKeys<Key, Row>,
    private start: Key,
    private end: Key | null,
    private readonly order: "asc" | "desc",
    private readonly pageSize: number,
  ) {}

  peek(): Row | undefined {
    if (this.at < this.page.length) return this.page[this.at];
    if (this.exhausted) return undefined;
    this.fetch();
    return this.page[this.at];
  }

  advance(): void {
    this.at++;
  }

  private fetch(): void {
    this.at = 0;
    if (this.end !== null && this.keys.isEmpty(this.start, this.end)) {
      this.exhausted = true;
      this.page = [];
      return;
    }
    this.page = this.keys.fetch(this.start, this.end, this.pageSize);
    if (this.page.length < this.pageSize) {
      this.exhausted = true;
      return;
    }
    const lastKey = this.keys.keyOf(this.page[this.page.length - 1]!);
    if (this.order === "asc") this.start = this.keys.after(lastKey);
    else this.end = lastKey;
  }
}
