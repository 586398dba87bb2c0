import type { Value } from "../model/Value.js";
import { decodeValue } from "../model/ValueJson.js";

/** Resolves with the decoded value, or rejects with the decoder's error (VALUE_INVALID naming the path). */
export function settleDecoded(json: unknown, resolve: (value: Value) => void, reject: (error: unknown) => void): void {
  let value: Value;
  try {
    value = decodeValue(json);
  } catch (error) {
    reject(error);
    return;
  }
  resolve(value);
}
