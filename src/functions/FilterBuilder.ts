import { CairnError } from "../base/index.js";
import { compareValues, validateValue, type Value } from "../model/index.js";

/**
 * `.filter(q => …)` on a query: a predicate over each document of the index range, built
 * from field references, literal values, comparisons and logic, evaluated on the
 * documents the scan reads (filters narrow what a query returns, not what it reads: an
 * index range does that).
 *
 *   .filter((q) => q.and(q.eq(q.field("status"), "open"), q.gte(q.field("priority"), 2)))
 *
 * - `q.field("a.b")` is a document's field (dots reach into nested objects); a missing
 *   field is `undefined`, which equals only `undefined` and sorts before every value.
 * - Comparisons use the total order of values (compareValues: the order of index keys,
 *   so `q.lt` agrees with an index range).
 * - A document passes when the expression is exactly `true`; the function must return a
 *   q expression (a plain value is refused: it is most often a forgotten `return`).
 *
 * Operands that are neither expressions nor valid values (a function, a Date, a cyclic
 * object) are refused when the filter is built (INVALID_ARGUMENT).
 */
export type FilterOperand = FilterExpression | Value | undefined;

const EXPRESSION = Symbol("cairn.filterExpression");

export interface FilterExpression {
  readonly [EXPRESSION]: Node;
}

type Comparison = "eq" | "neq" | "lt" | "lte" | "gt" | "gte";
type Node =
  | { readonly kind: "field"; readonly path: readonly string[] }
  | { readonly kind: "literal"; readonly value: Value | undefined }
  | { readonly kind: "compare"; readonly op: Comparison; readonly left: Node; readonly right: Node }
  | { readonly kind: "and" | "or"; readonly items: readonly Node[] }
  | { readonly kind: "not"; readonly item: Node };

export interface FilterBuilder {
  field(path: string): FilterExpression;
  eq(left: FilterOperand, right: FilterOperand): FilterExpression;
  neq(left: FilterOperand, right: FilterOperand): FilterExpression;
  lt(left: FilterOperand, right: FilterOperand): FilterExpression;
  lte(left: FilterOperand, right: FilterOperand): FilterExpression;
  gt(left: FilterOperand, right: FilterOperand): FilterExpression;
  gte(left: FilterOperand, right: FilterOperand): FilterExpression;
  and(...items: FilterOperand[]): FilterExpression;
  or(...items: FilterOperand[]): FilterExpression;
  not(item: FilterOperand): FilterExpression;
}

export type DocumentPredicate = (document: Record<string, unknown>) => boolean;

/** The predicate `build` describes; INVALID_ARGUMENT for a malformed filter. */
export function documentPredicate(build: unknown): DocumentPredicate {
  if (typeof build !== "function") throw misuse("filter takes a function q => q.eq(q.field(…), …)");
  const built: unknown = build(BUILDER);
  // A value here is most often a forgotten `return`: every document would silently fail.
  if (typeof built !== "object" || built === null || !(EXPRESSION in built)) {
    throw misuse(`filter's function must return a q expression (q.eq(…), q.and(…), …), not ${describe(built)}`);
  }
  const node = nodeOf(built);
  return (document) => evaluate(node, document) === true;
}

const BUILDER: FilterBuilder = {
  field: (path) => {
    if (typeof path !== "string" || path.length === 0 || path.split(".").some((part) => part.length === 0)) {
      throw misuse(`q.field takes a field name ("status", or "address.city"), not ${describe(path)}`);
    }
    return expression({ kind: "field", path: path.split(".") });
  },
  eq: (left, right) => compare("eq", left, right),
  neq: (left, right) => compare("neq", left, right),
  lt: (left, right) => compare("lt", left, right),
  lte: (left, right) => compare("lte", left, right),
  gt: (left, right) => compare("gt", left, right),
  gte: (left, right) => compare("gte", left, right),
  and: (...items) => expression({ kind: "and", items: items.map(nodeOf) }),
  or: (...items) => expression({ kind: "or", items: items.map(nodeOf) }),
  not: (item) => expression({ kind: "not", item: nodeOf(item) }),
};

function compare(op: Comparison, left: FilterOperand, right: FilterOperand): FilterExpression {
  return expression({ kind: "compare", op, left: nodeOf(left), right: nodeOf(right) });
}

function expression(node: Node): FilterExpression {
  return Object.freeze({ [EXPRESSION]: node });
}

function nodeOf(operand: unknown): Node {
  if (typeof operand === "object" && operand !== null && EXPRESSION in operand) return (operand as FilterExpression)[EXPRESSION];
  if (operand === undefined) return { kind: "literal", value: undefined };
  try {
    validateValue(operand);
  } catch (error) {
    throw new CairnError("INVALID_ARGUMENT", `query: a filter operand must be q.field(…), another q expression or a value: ${(error as Error).message}`, { cause: error });
  }
  return { kind: "literal", value: operand as Value };
}

function evaluate(node: Node, document: Record<string, unknown>): Value | undefined {
  switch (node.kind) {
    case "literal":
      return node.value;
    case "field": {
      let value: unknown = document;
      for (const part of node.path) {
        if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array || !Object.hasOwn(value, part)) return undefined;
        value = (value as Record<string, unknown>)[part];
      }
      return value as Value;
    }
    case "compare": {
      const order = compareOperands(evaluate(node.left, document), evaluate(node.right, document));
      return COMPARISONS[node.op](order);
    }
    case "and":
      return node.items.every((item) => evaluate(item, document) === true);
    case "or":
      return node.items.some((item) => evaluate(item, document) === true);
    case "not":
      return evaluate(node.item, document) !== true;
  }
}

const COMPARISONS: Readonly<Record<Comparison, (order: number) => boolean>> = {
  eq: (order) => order === 0,
  neq: (order) => order !== 0,
  lt: (order) => order < 0,
  lte: (order) => order <= 0,
  gt: (order) => order > 0,
  gte: (order) => order >= 0,
};

/** compareValues, with `undefined` (a missing field) equal only to itself and before every value. */
function compareOperands(left: Value | undefined, right: Value | undefined): number {
  if (left === undefined || right === undefined) return left === right ? 0 : left === undefined ? -1 : 1;
  return compareValues(left, right);
}

/** Any value, for a message (JSON.stringify throws on a bigint). */
function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "object" && value !== null) return Array.isArray(value) ? "an array" : "an object";
  return String(value);
}

function misuse(message: string): CairnError {
  return new CairnError("INVALID_ARGUMENT", `query: ${message}`);
}
