import { CairnError } from "../base/index.js";
import type { DocumentId } from "../model/index.js";
import type { PendingDocuments, PendingRevision } from "./PendingDocuments.js";
import type { RecentWrites } from "./RecentWrites.js";
import type { WrittenKeyIndex } from "./WrittenKeyIndex.js";
import type { PendingReadToken } from "./WriteUnit.js";

/**
 * A mutation's view of its shard writer's pending state (early lock release, DESIGN.md
 * §4): the local store at `readTs`, plus — for reads by id — the revisions of the units
 * queued up to the view's seq, durable or not. Its commit carries `token`: the writer
 * acknowledges it only after every unit it read (they go first in log order), fails it
 * if one of them fails (all later units fail), and refuses it once the writer left the
 * epoch the view was made in. Ranges are not merged with pending writes: a scan over a
 * range a pending unit writes waits until that unit is durable (the caller re-runs).
 * Made by ShardEngine.pendingView, for one run of a mutation.
 */
export class PendingView {
  constructor(
    readonly shard: number,
    readonly readTs: number,
    /** The seq of the last unit queued when the view was made. */
    private readonly through: number,
    /** The seq of the last unit acknowledged then: the store at readTs holds every unit up to it. */
    private readonly durableThrough: number,
    private readonly epoch: number,
    private readonly documents: PendingDocuments,
    private readonly pendingKeys: WrittenKeyIndex,
    private readonly recentWrites: RecentWrites,
  ) {}

  /** What the commit carries; undefined when nothing was pending (the usual check after readTs applies). */
  get token(): PendingReadToken | undefined {
    return this.through > this.durableThrough ? { through: this.through, epoch: this.epoch } : undefined;
  }

  /**
   * The pending revision of `id` this view sees; undefined: read the local store at
   * readTs. WRITE_CONFLICT (re-run at once) when neither holds it any more: a unit this
   * view sees, or a later one, wrote `id` and became durable after readTs meanwhile.
   */
  document(id: DocumentId): PendingRevision | undefined {
    const revision = this.documents.visible(id, this.through);
    if (revision !== undefined) return revision;
    if (this.through > this.durableThrough && this.recentWrites.touches(this.readTs, { documents: [id] })) {
      throw new CairnError("WRITE_CONFLICT", `shard ${this.shard}: document ${id} was committed while this transaction read it; it runs again`, {
        details: { shard: this.shard, id },
      });
    }
    return undefined;
  }

  /** Whether a queued or in-flight unit writes a key of index `indexId` in [start, end). */
  indexRangePending(indexId: number, start: Uint8Array, end: Uint8Array | null): boolean {
    return this.pendingKeys.touches({ indexRanges: [{ indexId, start, end }] }, () => true);
  }

  /** Whether a queued or in-flight unit writes a document of `tableNumber`. */
  tablePending(tableNumber: number): boolean {
    return this.documents.writesTable(tableNumber);
  }
}
