import { CairnError } from "../base/index.js";
import type { DumpChunk, DumpCursor, LocalMeta } from "../local/index.js";

/**
 * One new lane's share of several old lanes' dumps, as one dump cursor (the input of
 * writeSnapshot): every source's documents first, then every source's index entries,
 * then every source's receipts (the order a dump promises), keeping the rows `keep`
 * accepts.
 *
 * Memory stays bounded by one chunk per source: a source's first chunk of the next kind
 * waits in `pending` until that kind's turn.
 */
const KINDS: readonly DumpChunk["kind"][] = ["documents", "indexEntries", "receipts"];

export type RowFilter = (chunk: DumpChunk["kind"], row: DumpChunk["rows"][number], source: number) => boolean;

export class ReroutedDump implements DumpCursor {
  private readonly pending: (DumpChunk | null | undefined)[];
  private kindIndex = 0;
  private source = 0;
  private closed = false;

  constructor(
    private readonly sources: readonly DumpCursor[],
    readonly meta: LocalMeta,
    private readonly keep: RowFilter,
  ) {
    // undefined: nothing read yet; null: the source is exhausted.
    this.pending = sources.map(() => undefined);
  }

  next(): DumpChunk | null {
    if (this.closed) throw new CairnError("LOCAL_CLOSED", "dump cursor is closed");
    while (this.kindIndex < KINDS.length) {
      const kind = KINDS[this.kindIndex]!;
      while (this.source < this.sources.length) {
        const chunk = this.take(this.source, kind);
        if (chunk === null) {
          this.source++;
          continue;
        }
        const rows = (chunk.rows as readonly DumpChunk["rows"][number][]).filter((row) => this.keep(kind, row, this.source));
        if (rows.length > 0) return { kind, rows } as DumpChunk;
      }
      this.kindIndex++;
      this.source = 0;
    }
    return null;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const source of this.sources) source.close();
  }

  /** The source's next chunk of `kind`, or null once it has no more of that kind. */
  private take(source: number, kind: DumpChunk["kind"]): DumpChunk | null {
    let chunk = this.pending[source];
    if (chunk === undefined) chunk = this.sources[source]!.next();
    if (chunk === null) {
      this.pending[source] = null;
      return null;
    }
    if (chunk.kind !== kind) {
      if (KINDS.indexOf(chunk.kind) < KINDS.indexOf(kind)) {
        throw new CairnError("INTERNAL", `dump of source ${source} yielded ${chunk.kind} after ${kind}`);
      }
      this.pending[source] = chunk;
      return null;
    }
    this.pending[source] = undefined;
    return chunk;
  }
}
