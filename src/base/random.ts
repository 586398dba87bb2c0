/**
 * Randomness is injected so that a simulation seed replays exactly. Production uses the
 * system CSPRNG; tests use SeededRandom.
 */
export interface Random {
  /** `length` random bytes. */
  bytes(length: number): Uint8Array;
  /** A float in [0, 1). */
  float(): number;
}

/**
 * Fills `bytes` from the system CSPRNG through Web Crypto (a global in Node 20 and in
 * browsers), not node:crypto: the client's browser bundle holds this module too (through
 * base/index.ts), and a bundle for browsers cannot import node:crypto. One call fills at
 * most WEB_CRYPTO_FILL_BYTES_MAX bytes (the Web Crypto limit).
 */
const WEB_CRYPTO_FILL_BYTES_MAX = 65_536;

function fillFromSystem(bytes: Uint8Array): Uint8Array {
  for (let at = 0; at < bytes.byteLength; at += WEB_CRYPTO_FILL_BYTES_MAX) {
    globalThis.crypto.getRandomValues(bytes.subarray(at, at + WEB_CRYPTO_FILL_BYTES_MAX));
  }
  return bytes;
}

/**
 * The system CSPRNG, drawn in blocks: each system call costs several
 * microseconds whatever its size, and every insert needs 16 bytes for its id, so bytes
 * come from a pool refilled SYSTEM_RANDOM_POOL_BYTES at a time. Bytes are handed out once
 * and never reused.
 */
const SYSTEM_RANDOM_POOL_BYTES = 16 * 1024;

class SystemRandom implements Random {
  private readonly pool = new Uint8Array(SYSTEM_RANDOM_POOL_BYTES);
  private at = SYSTEM_RANDOM_POOL_BYTES;

  bytes(length: number): Uint8Array {
    if (length > SYSTEM_RANDOM_POOL_BYTES) return fillFromSystem(new Uint8Array(length));
    if (this.at + length > SYSTEM_RANDOM_POOL_BYTES) {
      fillFromSystem(this.pool);
      this.at = 0;
    }
    const out = this.pool.slice(this.at, this.at + length);
    this.at += length;
    return out;
  }

  float(): number {
    const bytes = this.bytes(4);
    return (((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!) / 0x1_0000_0000;
  }
}

export const systemRandom: Random = new SystemRandom();

/** Deterministic generator (sfc32) for simulations and property tests. Not for secrets. */
export class SeededRandom implements Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  private next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  float(): number {
    return this.next() / 0x1_0000_0000;
  }

  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i++) out[i] = this.next() & 0xff;
    return out;
  }
}

export function randomInt(random: Random, maxExclusive: number): number {
  return Math.floor(random.float() * maxExclusive);
}

/** A random lowercase hex string of `byteLength` bytes (nonces, node ids, probe keys). */
export function randomHex(random: Random, byteLength: number): string {
  return Buffer.from(random.bytes(byteLength)).toString("hex");
}
