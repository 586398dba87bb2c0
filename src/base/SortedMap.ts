import sortedBtree from "sorted-btree";

/**
 * An in-memory sorted map (a B+ tree, from `sorted-btree`), for the overlay's index keys
 * and the engine's written-key index.
 *
 * sorted-btree is CommonJS with the class as `exports.default`: Node's ESM import gives
 * the exports object, a bundler's interop (vitest) may give the class itself.
 */
export const SortedMap: typeof sortedBtree.default =
  (sortedBtree as unknown as { default?: typeof sortedBtree.default }).default ?? (sortedBtree as unknown as typeof sortedBtree.default);
export type SortedMap<K, V> = InstanceType<typeof sortedBtree.default<K, V>>;
