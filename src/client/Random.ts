/**
 * The randomness the client draws (ids, reconnect jitter). Its shape is base/random's
 * `Random`, so tests can pass a seeded generator; the default is the platform CSPRNG,
 * `globalThis.crypto.getRandomValues`, present in browsers and in Node 20.
 */
export interface Random {
  /** `length` random bytes. */
  bytes(length: number): Uint8Array;
  /** A float in [0, 1). */
  float(): number;
}

export const cryptoRandom: Random = {
  bytes: (length) => globalThis.crypto.getRandomValues(new Uint8Array(length)),
  float: () => globalThis.crypto.getRandomValues(new Uint32Array(1))[0]! / 0x1_0000_0000,
};

/** `byteCount` random bytes as lowercase hex (two characters a byte). */
export function randomHex(random: Random, byteCount: number): string {
  let hex = "";
  for (const byte of random.bytes(byteCount)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
