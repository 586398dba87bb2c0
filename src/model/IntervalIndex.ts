import { assert } from "../base/index.js";
import type { KeyRange } from "./KeyRange.js";
import { isEmptyRange, startsBeforeEnd, validateKeyRange } from "./KeyRange.js";
import { compareBytes } from "./compareBytes.js";

/**
 * Stored key ranges with payloads (e.g. subscription ids), answering "which ranges
 * contain this key / overlap this range". Subscriptions are matched against each
 * commit's writes with it.
 *
 * One AVL tree per keyspace, ordered by (start, insertion number), each node augmented
 * with the largest end in its subtree (null = +infinity). A query descends only into
 * subtrees whose largest end lies above the query's start, and right of a node only if
 * that node starts before the query's end; every visited node off the search path is an
 * ancestor of a reported range. Cost: O(log n) for insert and remove, O(log n + k·log(n/k))
 * to report k ranges (O(log n) when nothing matches). AVL rather than a treap: no
 * randomness to inject, and a hard height bound of 1.44·log2(n + 2).
 *
 * Invariants (checked by `checkInvariants`):
 * - in-order traversal is ascending by (start, sequence);
 * - every node's height is 1 + max(child heights), and children differ by at most 1;
 * - every node's maxEnd is the largest end of a non-empty range in its subtree (null if
 *   any such end is null, the empty key if there is none);
 * - `size` equals the number of live handles, which equals the number of tree nodes;
 * - empty keyspace trees are dropped, so memory follows the live ranges.
 *
 * Ranges are copied on insert and never handed out again, so no caller can reorder the
 * tree by mutating key bytes — except through `insertShared`, for callers whose ranges
 * are immutable by construction and held many times over (a subscription range that a
 * thousand sessions register once each would otherwise be a thousand copies). Duplicate ranges are allowed and reported once per handle;
 * empty ranges are stored but never reported.
 */

/** Names one inserted range, for `remove`. Opaque: only the index that issued it knows it. */
export interface IntervalHandle {
  /** Insertion number, unique within the issuing index (useful in logs). */
  readonly id: number;
}

interface Node<T> {
  readonly keyspace: string;
  readonly start: Uint8Array;
  readonly end: Uint8Array | null;
  readonly sequence: number;
  readonly payload: T;
  /** What the node adds to maxEnd: its end, or the smallest key if the range is empty. */
  readonly reach: Uint8Array | null;
  left: Node<T> | null;
  right: Node<T> | null;
  height: number;
  maxEnd: Uint8Array | null;
}

const EMPTY_KEY = new Uint8Array(0);

interface Tree<T> {
  root: Node<T> | null;
}

export class IntervalIndex<T> {
  private readonly trees = new Map<string, Tree<T>>();
  private readonly nodes = new Map<IntervalHandle, Node<T>>();
  private sequenceNext = 0;

  get size(): number {
    return this.nodes.size;
  }

  /** Stores `range` with `payload`; KEY_RANGE_INVALID for a malformed range. */
  insert(range: KeyRange, payload: T): IntervalHandle {
    return this.insertKeys(range, payload, range.start.slice(), range.end === null ? null : range.end.slice());
  }

  /**
   * `insert` without copying the key bytes: the caller promises that nothing will ever
   * change them (the sync handler's read ranges, made once per run and shared by every
   * session the run served).
   */
  insertShared(range: KeyRange, payload: T): IntervalHandle {
    return this.insertKeys(range, payload, range.start, range.end);
  }

  private insertKeys(range: KeyRange, payload: T, start: Uint8Array, end: Uint8Array | null): IntervalHandle {
    validateKeyRange(range);
    // An empty range overlaps nothing, so it must not make its subtree look reachable.
    const reach = isEmptyRange(range) ? EMPTY_KEY : end;
    const node: Node<T> = {
      keyspace: range.keyspace,
      start,
      end,
      sequence: this.sequenceNext++,
      payload,
      reach,
      left: null,
      right: null,
      height: 1,
      maxEnd: reach,
    };
    const tree = this.treeFor(range.keyspace);
    tree.root = insertNode(tree.root, node);
    const handle: IntervalHandle = Object.freeze({ id: node.sequence });
    this.nodes.set(handle, node);
    return handle;
  }

  /** Removes the range `handle` names; removing an unknown or removed handle is a bug. */
  remove(handle: IntervalHandle): void {
    const node = this.nodes.get(handle);
    assert(node !== undefined, "IntervalIndex.remove: unknown or already removed handle");
    const keyspace = node.keyspace;
    const tree = this.trees.get(keyspace);
    assert(tree !== undefined, "IntervalIndex.remove: keyspace of a live handle has no tree");
    const removal = { found: false };
    tree.root = removeNode(tree.root, node, removal);
    assert(removal.found, "IntervalIndex.remove: live handle not found in its tree");
    this.nodes.delete(handle);
    if (tree.root === null) this.trees.delete(keyspace);
  }

  /** Payloads of the stored ranges that overlap `range`, in order of (start, insertion). */
  overlapping(range: KeyRange): T[];
  /** Payloads of the stored ranges that contain `key`, in order of (start, insertion). */
  overlapping(keyspace: string, key: Uint8Array): T[];
  overlapping(rangeOrKeyspace: KeyRange | string, key?: Uint8Array): T[] {
    const found: T[] = [];
    if (typeof rangeOrKeyspace === "string") {
      assert(key instanceof Uint8Array, "IntervalIndex.overlapping(keyspace, key) needs a Uint8Array key");
      collectContaining(this.trees.get(rangeOrKeyspace)?.root ?? null, key, found);
      return found;
    }
    validateKeyRange(rangeOrKeyspace);
    if (isEmptyRange(rangeOrKeyspace)) return found;
    const root = this.trees.get(rangeOrKeyspace.keyspace)?.root ?? null;
    collectOverlapping(root, rangeOrKeyspace.start, rangeOrKeyspace.end, found);
    return found;
  }

  /** Height of a keyspace's tree (0 when it has no ranges); for balance checks. */
  heightOf(keyspace: string): number {
    return this.trees.get(keyspace)?.root?.height ?? 0;
  }

  /** Asserts every invariant listed above; walks the whole index, for tests. */
  checkInvariants(): void {
    let nodeCount = 0;
    for (const tree of this.trees.values()) {
      assert(tree.root !== null, "an empty keyspace tree was kept");
      nodeCount += checkSubtree(tree.root, null, null).count;
    }
    assert(nodeCount === this.nodes.size, `tree holds ${nodeCount} nodes but ${this.nodes.size} handles are live`);
  }

  private treeFor(keyspace: string): Tree<T> {
    let tree = this.trees.get(keyspace);
    if (tree === undefined) {
      tree = { root: null };
      this.trees.set(keyspace, tree);
    }
    return tree;
  }
}

// ---- queries ----------------------------------------------------------------------------

/** Ranges with start < queryEnd and end > queryStart (the query is non-empty). */
function collectOverlapping<T>(
  node: Node<T> | null,
  queryStart: Uint8Array,
  queryEnd: Uint8Array | null,
  found: T[],
): void {
  if (node === null || !startsBeforeEnd(queryStart, node.maxEnd)) return;
  collectOverlapping(node.left, queryStart, queryEnd, found);
  if (!startsBeforeEnd(node.start, queryEnd)) return;
  if (startsBeforeEnd(queryStart, node.reach)) found.push(node.payload);
  collectOverlapping(node.right, queryStart, queryEnd, found);
}

/** Ranges with start <= key < end. */
function collectContaining<T>(node: Node<T> | null, key: Uint8Array, found: T[]): void {
  if (node === null || !startsBeforeEnd(key, node.maxEnd)) return;
  collectContaining(node.left, key, found);
  if (compareBytes(node.start, key) > 0) return;
  if (startsBeforeEnd(key, node.end)) found.push(node.payload);
  collectContaining(node.right, key, found);
}

// ---- AVL maintenance --------------------------------------------------------------------

function compareNodes<T>(left: Node<T>, right: Node<T>): number {
  return compareBytes(left.start, right.start) || left.sequence - right.sequence;
}

function insertNode<T>(root: Node<T> | null, node: Node<T>): Node<T> {
  if (root === null) return node;
  if (compareNodes(node, root) < 0) root.left = insertNode(root.left, node);
  else root.right = insertNode(root.right, node);
  return rebalance(root);
}

function removeNode<T>(root: Node<T> | null, target: Node<T>, removal: { found: boolean }): Node<T> | null {
  if (root === null) return null;
  const order = compareNodes(target, root);
  if (order < 0) root.left = removeNode(root.left, target, removal);
  else if (order > 0) root.right = removeNode(root.right, target, removal);
  else {
    assert(root === target, "IntervalIndex: two nodes share a (start, sequence) key");
    removal.found = true;
    return joinChildren(root);
  }
  return rebalance(root);
}

/** Replaces a removed node by its in-order successor (or its only child). */
function joinChildren<T>(removed: Node<T>): Node<T> | null {
  if (removed.left === null) return removed.right;
  if (removed.right === null) return removed.left;
  const taken = { minimum: null as Node<T> | null };
  const right = removeMinimum(removed.right, taken);
  const successor = taken.minimum!;
  successor.left = removed.left;
  successor.right = right;
  return rebalance(successor);
}

function removeMinimum<T>(root: Node<T>, taken: { minimum: Node<T> | null }): Node<T> | null {
  if (root.left === null) {
    taken.minimum = root;
    return root.right;
  }
  root.left = removeMinimum(root.left, taken);
  return rebalance(root);
}

function heightOf<T>(node: Node<T> | null): number {
  return node === null ? 0 : node.height;
}

/** Restores height, maxEnd and the AVL balance of `node`, whose subtrees are valid AVL trees. */
function rebalance<T>(node: Node<T>): Node<T> {
  const balance = heightOf(node.left) - heightOf(node.right);
  if (balance > 1) {
    if (heightOf(node.left!.left) < heightOf(node.left!.right)) node.left = rotateLeft(node.left!);
    return rotateRight(node);
  }
  if (balance < -1) {
    if (heightOf(node.right!.right) < heightOf(node.right!.left)) node.right = rotateRight(node.right!);
    return rotateLeft(node);
  }
  update(node);
  return node;
}

function rotateLeft<T>(node: Node<T>): Node<T> {
  const pivot = node.right!;
  node.right = pivot.left;
  pivot.left = node;
  update(node);
  update(pivot);
  return pivot;
}

function rotateRight<T>(node: Node<T>): Node<T> {
  const pivot = node.left!;
  node.left = pivot.right;
  pivot.right = node;
  update(node);
  update(pivot);
  return pivot;
}

function update<T>(node: Node<T>): void {
  node.height = 1 + Math.max(heightOf(node.left), heightOf(node.right));
  node.maxEnd = maxEnd(maxEnd(node.reach, node.left?.maxEnd), node.right?.maxEnd);
}

/** The larger end; null is +infinity, undefined means "no child". */
function maxEnd(left: Uint8Array | null, right: Uint8Array | null | undefined): Uint8Array | null {
  if (right === undefined) return left;
  if (left === null || right === null) return null;
  return compareBytes(left, right) >= 0 ? left : right;
}

function checkSubtree<T>(
  node: Node<T>,
  lowest: Node<T> | null,
  highest: Node<T> | null,
): { count: number; height: number; maxEnd: Uint8Array | null } {
  assert(lowest === null || compareNodes(lowest, node) < 0, "nodes out of order");
  assert(highest === null || compareNodes(node, highest) < 0, "nodes out of order");
  const left = node.left === null ? null : checkSubtree(node.left, lowest, node);
  const right = node.right === null ? null : checkSubtree(node.right, node, highest);
  const leftHeight = left?.height ?? 0;
  const rightHeight = right?.height ?? 0;
  assert(Math.abs(leftHeight - rightHeight) <= 1, "AVL balance violated");
  assert(node.height === 1 + Math.max(leftHeight, rightHeight), "stale height");
  const expectedMaxEnd = maxEnd(maxEnd(node.reach, left?.maxEnd), right?.maxEnd);
  const same = expectedMaxEnd === null
    ? node.maxEnd === null
    : node.maxEnd !== null && compareBytes(expectedMaxEnd, node.maxEnd) === 0;
  assert(same, "stale maxEnd");
  return { count: 1 + (left?.count ?? 0) + (right?.count ?? 0), height: node.height, maxEnd: node.maxEnd };
}
