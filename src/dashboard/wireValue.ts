import type { Value } from "cairn/client";
import type { WireValue } from "./adminTypes.js";

/**
 * Cairn's JSON value encoding, both ways, for the page: the admin HTTP routes speak it,
 * the client library speaks values (bigints, bytes). What a person reads and types is
 * always the encoding, so a document shown from a live query and one from the history
 * look the same, and `{"$integer": "5"}` typed in a filter means the int64 5.
 */
export function toWire(value: Value): WireValue {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") {
    if (Number.isNaN(value)) return { $float: "NaN" };
    if (value === Number.POSITIVE_INFINITY) return { $float: "Infinity" };
    if (value === Number.NEGATIVE_INFINITY) return { $float: "-Infinity" };
    if (Object.is(value, -0)) return { $float: "-0" };
    return value;
  }
  if (typeof value === "bigint") return { $integer: value.toString() };
  if (value instanceof Uint8Array) return { $bytes: bytesToBase64(value) };
  if (Array.isArray(value)) return value.map(toWire);
  const object: { [field: string]: WireValue } = {};
  for (const [field, inner] of Object.entries(value)) object[field] = toWire(inner);
  return object;
}

/** The value a JSON-encoded one stands for; an Error naming the bad part for a malformed special. */
export function fromWire(wire: WireValue): Value {
  if (wire === null || typeof wire !== "object") return wire;
  if (Array.isArray(wire)) return wire.map(fromWire);
  const fields = Object.keys(wire);
  if (fields.length === 1 && fields[0]!.startsWith("$")) return special(fields[0]!, wire[fields[0]!]!);
  const object: { [field: string]: Value } = {};
  for (const field of fields) object[field] = fromWire(wire[field]!);
  return object;
}

function special(tag: string, inner: WireValue): Value {
  if (typeof inner !== "string") throw new Error(`${tag} takes a string`);
  switch (tag) {
    case "$integer":
      return BigInt(inner);
    case "$bytes":
      return Uint8Array.from(atob(inner), (character) => character.charCodeAt(0));
    case "$float":
      return Number(inner === "-0" ? "-0" : inner);
    default:
      throw new Error(`unknown special value ${tag} (field names may not start with $)`);
  }
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Parses JSON typed by a person; an Error with the parser's message. */
export function parseJsonText(text: string, what: string): WireValue {
  try {
    return JSON.parse(text) as WireValue;
  } catch (error) {
    throw new Error(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}
