import type { Value } from "../model/Value.js";
import { withoutUndefinedFields } from "../model/withoutUndefinedFields.js";
import { encodeValue, type JsonValue } from "../model/ValueJson.js";

/**
 * Arguments as they travel: Cairn's JSON encoding, and its text, which names a query
 * subscription together with the path (two calls with equal arguments share one).
 */
export interface EncodedArgs {
  readonly json: JsonValue;
  readonly text: string;
}

/**
 * Encodes arguments (an object of values; `undefined` means none). An `undefined` field
 * counts as missing, as `v.optional` declares on the server, so it is left out at any
 * depth; anything else that is not a value fails with VALUE_INVALID naming its path.
 */
export function encodeArgs(args: unknown): EncodedArgs {
  const json = encodeValue(withoutUndefinedFields(args ?? {}) as Value);
  return { json, text: JSON.stringify(json) };
}
