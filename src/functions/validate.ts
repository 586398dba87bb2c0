import type { z } from "zod";
import { CairnError } from "../base/errors.js";
import { formatPath, setField, validateValue } from "../model/Value.js";
import { withIdScope, type TableNumberOf } from "./idScope.js";

/**
 * Runs a validator and turns its verdict into Cairn's: the parsed value with every
 * `undefined` object field removed (a missing optional field is simply absent, never
 * stored as `undefined`), checked to be a Cairn value; or INVALID_ARGUMENT naming the
 * path of the first bad field from `subject.root` on: "invalid argument args.author:
 * expected a string".
 */
export interface ValidationSubject {
  /** What is being validated, for the message: "argument", "document", "return value". */
  readonly noun: string;
  /** The name the path starts from: "args", the table's name, "result". */
  readonly root: string;
}

export function validateWith<T>(validator: z.ZodType<T>, input: unknown, subject: ValidationSubject, tables: TableNumberOf): T {
  const result = withIdScope(tables, () => validator.safeParse(input));
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const path = issue.path.filter((part): part is string | number => typeof part !== "symbol");
    const where = path.length === 0 ? subject.root : `${subject.root}${formatPath(path)}`;
    throw new CairnError("INVALID_ARGUMENT", `invalid ${subject.noun} ${where}: ${issue.message}`, {
      details: { path: where, issues: result.error.issues.length },
    });
  }
  const value = withoutUndefinedFields(result.data);
  try {
    validateValue(value);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CairnError("INVALID_ARGUMENT", `invalid ${subject.noun} ${subject.root}: ${message}`, {
      cause: error,
      details: { path: (error as { details?: { path?: unknown } }).details?.path ?? subject.root },
    });
  }
  return value as T;
}

/** Whether some object field, at any depth, is `undefined` (most inputs have none, and need no copy). */
function hasUndefinedField(value: unknown, depth = 0): boolean {
  if (depth > 128 || typeof value !== "object" || value === null || value instanceof Uint8Array) return false;
  if (Array.isArray(value)) return value.some((element: unknown) => hasUndefinedField(element, depth + 1));
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const field = (value as Record<string, unknown>)[name];
    if (field === undefined || hasUndefinedField(field, depth + 1)) return true;
  }
  return false;
}

/**
 * `value` without `undefined` object fields, at any depth (arrays keep their elements):
 * `value` itself when it has none, as almost every input does, else a copy.
 */
export function withoutUndefinedFields(value: unknown): unknown {
  return hasUndefinedField(value) ? copyWithoutUndefined(value, 0) : value;
}

function copyWithoutUndefined(value: unknown, depth: number): unknown {
  if (depth > 128 || typeof value !== "object" || value === null || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map((element: unknown) => copyWithoutUndefined(element, depth + 1));
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    if (field !== undefined) setField(out, name, copyWithoutUndefined(field, depth + 1));
  }
  return out;
}
