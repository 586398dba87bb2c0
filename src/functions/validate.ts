import type { z } from "zod";
import { CairnError } from "../base/index.js";
import { formatPath, validateValue, withoutUndefinedFields } from "../model/index.js";
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
