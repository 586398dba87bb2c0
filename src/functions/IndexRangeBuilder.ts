import { CairnError } from "../base/index.js";
import { type IndexBound, type IndexBounds, validateValue, type Value } from "../model/index.js";
import type { IndexInfo } from "./catalog.js";

/**
 * The `q` of `withIndex(name, q => q.eq("a", 1).gt("b", 2).lte("b", 9))`: equalities on
 * the index's first fields in order, then at most one lower and one upper bound on the
 * next field. Anything else is INVALID_ARGUMENT naming the index and what it expected,
 * because a range the index cannot serve would silently read the wrong rows.
 */
export class IndexRangeBuilder {
  private readonly equal: (Value | undefined)[] = [];
  private lower: IndexBound | undefined;
  private upper: IndexBound | undefined;
  private rangeField: string | null = null;

  constructor(
    private readonly table: string,
    private readonly index: IndexInfo,
  ) {}

  eq(field: string, value: Value | undefined): this {
    if (this.rangeField !== null) throw this.misuse(`eq("${field}") after a range on "${this.rangeField}"; equalities come first`);
    this.expectNextField(field, "eq");
    this.equal.push(checked(value));
    return this;
  }

  gt(field: string, value: Value | undefined): this {
    return this.bound("lower", field, value, false);
  }

  gte(field: string, value: Value | undefined): this {
    return this.bound("lower", field, value, true);
  }

  lt(field: string, value: Value | undefined): this {
    return this.bound("upper", field, value, false);
  }

  lte(field: string, value: Value | undefined): this {
    return this.bound("upper", field, value, true);
  }

  bounds(): IndexBounds {
    return {
      equal: this.equal,
      ...(this.lower !== undefined ? { lower: this.lower } : {}),
      ...(this.upper !== undefined ? { upper: this.upper } : {}),
    };
  }

  private bound(side: "lower" | "upper", field: string, value: Value | undefined, inclusive: boolean): this {
    const name = side === "lower" ? (inclusive ? "gte" : "gt") : inclusive ? "lte" : "lt";
    if (this.rangeField === null) this.expectNextField(field, name);
    else if (field !== this.rangeField) throw this.misuse(`${name}("${field}") after a range on "${this.rangeField}"; one field takes a range`);
    if (this[side] !== undefined) throw this.misuse(`${name}("${field}"): the ${side} bound is already set`);
    this.rangeField = field;
    this[side] = { value: checked(value), inclusive };
    return this;
  }

  private expectNextField(field: string, method: string): void {
    const expected = this.index.keyFields[this.equal.length];
    if (expected === undefined) throw this.misuse(`${method}("${field}"): every field of the index is already fixed`);
    if (field !== expected) throw this.misuse(`${method}("${field}"): the next field of the index is "${expected}"`);
  }

  private misuse(message: string): CairnError {
    return new CairnError(
      "INVALID_ARGUMENT",
      `index ${this.table}.${this.index.name} on [${this.index.keyFields.join(", ")}]: ${message}`,
      { details: { table: this.table, index: this.index.name } },
    );
  }
}

function checked(value: Value | undefined): Value | undefined {
  if (value !== undefined) validateValue(value);
  return value;
}
