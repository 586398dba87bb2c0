/**
 * The position of the first item after `from` whose `ts` is above `ts`, in items kept in
 * ascending ts (a log's tail: the recent writes, recent revisions); `items.length` if none.
 * Binary search: O(log n).
 */
export function firstAfterTs(items: readonly { readonly ts: number }[], from: number, ts: number): number {
  let low = from;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (items[middle]!.ts <= ts) low = middle + 1;
    else high = middle;
  }
  return low;
}
