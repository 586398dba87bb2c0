/**
 * A text that names a call's arguments by content, so a hook re-subscribes when they
 * change and not when a render merely builds an equal object again. Equal values give
 * equal keys and different values different ones: every value kind is tagged (numbers
 * keep -0, NaN and ±Infinity; bigints and bytes are told apart from numbers and arrays),
 * and an `undefined` field counts as missing, as the client sends it. Anything that is
 * not a value gets one fixed key: the client refuses it (VALUE_INVALID) and the hook
 * shows that error, instead of re-subscribing on every render.
 */
export function argsKey(args: unknown): string {
  return JSON.stringify(keyOf(args ?? {}));
}

type KeyPart = string | boolean | null | readonly KeyPart[];

function keyOf(value: unknown): KeyPart {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return ["n", Object.is(value, -0) ? "-0" : String(value)];
    case "bigint":
      return ["i", value.toString()];
    case "object":
      if (value === null) return null;
      if (value instanceof Uint8Array) return ["b", Array.from(value).join(",")];
      if (Array.isArray(value)) return ["a", ...value.map(keyOf)];
      if (isPlainObject(value)) {
        const fields = Object.entries(value).filter(([, field]) => field !== undefined);
        return ["o", ...fields.map(([name, field]): KeyPart => [name, keyOf(field)])];
      }
      return ["not a value"];
    default:
      return ["not a value"];
  }
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
