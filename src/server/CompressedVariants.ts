/**
 * Compressed bodies kept in memory by key (a file's identity and version, and the
 * encoding), least recently used dropped first once they hold more than `bytesMax`.
 *
 * Invariants:
 * - The bytes held (`bytes`) are the sum of the settled bodies kept, at most `bytesMax`
 *   after every insertion (a body larger than `bytesMax` alone is returned, never kept).
 * - Concurrent requests for the same key share one compression (the pending promise is
 *   kept from the first request on); a compression that fails is forgotten, so the next
 *   request tries again.
 */
export class CompressedVariants {
  private readonly entries = new Map<string, Promise<Buffer>>();
  private readonly sizes = new Map<string, number>();
  private bytesHeld = 0;

  constructor(private readonly bytesMax: number) {}

  get bytes(): number {
    return this.bytesHeld;
  }

  get(key: string, compress: () => Promise<Buffer>): Promise<Buffer> {
    const held = this.entries.get(key);
    if (held !== undefined) {
      // Re-inserted: Map order is the recency order.
      this.entries.delete(key);
      this.entries.set(key, held);
      return held;
    }
    const compressing = compress();
    this.entries.set(key, compressing);
    compressing.then(
      (body) => this.settled(key, compressing, body.byteLength),
      () => {
        if (this.entries.get(key) === compressing) this.entries.delete(key);
      },
    );
    return compressing;
  }

  private settled(key: string, compressing: Promise<Buffer>, byteLength: number): void {
    if (this.entries.get(key) !== compressing) return;
    if (byteLength > this.bytesMax) {
      this.entries.delete(key);
      return;
    }
    this.sizes.set(key, byteLength);
    this.bytesHeld += byteLength;
    for (const oldest of this.entries.keys()) {
      if (this.bytesHeld <= this.bytesMax) break;
      if (oldest === key) continue;
      const size = this.sizes.get(oldest);
      if (size === undefined) continue; // still compressing: counted once it settles
      this.entries.delete(oldest);
      this.sizes.delete(oldest);
      this.bytesHeld -= size;
    }
  }
}
