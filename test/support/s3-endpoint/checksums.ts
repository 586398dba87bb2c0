import { createHash } from "node:crypto";

/**
 * The checksums S3 accepts in `x-amz-checksum-*` headers and trailers. CRC32, CRC32C and
 * CRC64/NVME are computed here with lookup tables; SHA-1 and SHA-256 come from
 * node:crypto. Every digest is the big-endian byte string S3 base64-encodes.
 */

export const CHECKSUM_ALGORITHMS = ["crc32", "crc32c", "crc64nvme", "sha1", "sha256"] as const;

export type ChecksumAlgorithm = (typeof CHECKSUM_ALGORITHMS)[number];

/** Digest length in bytes, which is also how a header value is checked for shape. */
export const CHECKSUM_BYTES: Readonly<Record<ChecksumAlgorithm, number>> = {
  crc32: 4,
  crc32c: 4,
  crc64nvme: 8,
  sha1: 20,
  sha256: 32,
};

/** The name S3 uses in messages and in `x-amz-sdk-checksum-algorithm`. */
export const CHECKSUM_DISPLAY_NAMES: Readonly<Record<ChecksumAlgorithm, string>> = {
  crc32: "CRC32",
  crc32c: "CRC32C",
  crc64nvme: "CRC64NVME",
  sha1: "SHA1",
  sha256: "SHA256",
};

export function isChecksumAlgorithm(value: string): value is ChecksumAlgorithm {
  return (CHECKSUM_ALGORITHMS as readonly string[]).includes(value);
}

export function checksumHeaderName(algorithm: ChecksumAlgorithm): string {
  return `x-amz-checksum-${algorithm}`;
}

export function checksumOf(algorithm: ChecksumAlgorithm, bytes: Uint8Array): Uint8Array {
  switch (algorithm) {
    case "crc32":
      return uint32BigEndian(crc32(bytes));
    case "crc32c":
      return uint32BigEndian(crc32c(bytes));
    case "crc64nvme":
      return crc64nvme(bytes);
    case "sha1":
      return new Uint8Array(createHash("sha1").update(bytes).digest());
    case "sha256":
      return new Uint8Array(createHash("sha256").update(bytes).digest());
  }
}

export function checksumBase64(algorithm: ChecksumAlgorithm, bytes: Uint8Array): string {
  return Buffer.from(checksumOf(algorithm, bytes)).toString("base64");
}

// ---- CRC32 (ISO-HDLC, the zlib one) and CRC32C (Castagnoli) -----------------------------

const CRC32_TABLE = reflectedTable32(0xedb88320);
const CRC32C_TABLE = reflectedTable32(0x82f63b78);

export function crc32(bytes: Uint8Array): number {
  return reflectedCrc32(CRC32_TABLE, bytes);
}

export function crc32c(bytes: Uint8Array): number {
  return reflectedCrc32(CRC32C_TABLE, bytes);
}

function reflectedTable32(polynomialReflected: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let index = 0; index < 256; index++) {
    let value = index;
    for (let bit = 0; bit < 8; bit++) {
      value = value & 1 ? (value >>> 1) ^ polynomialReflected : value >>> 1;
    }
    table[index] = value >>> 0;
  }
  return table;
}

function reflectedCrc32(table: Uint32Array, bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let index = 0; index < bytes.length; index++) {
    crc = table[(crc ^ bytes[index]) & 0xff] ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function uint32BigEndian(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value >>> 0, false);
  return out;
}

// ---- CRC64/NVME -------------------------------------------------------------------------
// 64-bit arithmetic on two 32-bit halves: BigInt per byte would make a 5 MB body slow.

const CRC64_NVME_TABLES = reflectedTable64(0x9a6c9329, 0xac4bc9b5);

function reflectedTable64(polynomialHigh: number, polynomialLow: number): {
  readonly high: Uint32Array;
  readonly low: Uint32Array;
} {
  const high = new Uint32Array(256);
  const low = new Uint32Array(256);
  for (let index = 0; index < 256; index++) {
    let valueHigh = 0;
    let valueLow = index;
    for (let bit = 0; bit < 8; bit++) {
      const carry = valueLow & 1;
      valueLow = ((valueLow >>> 1) | ((valueHigh & 1) << 31)) >>> 0;
      valueHigh = valueHigh >>> 1;
      if (carry) {
        valueHigh = (valueHigh ^ polynomialHigh) >>> 0;
        valueLow = (valueLow ^ polynomialLow) >>> 0;
      }
    }
    high[index] = valueHigh;
    low[index] = valueLow;
  }
  return { high, low };
}

export function crc64nvme(bytes: Uint8Array): Uint8Array {
  const { high: tableHigh, low: tableLow } = CRC64_NVME_TABLES;
  let crcHigh = 0xffffffff;
  let crcLow = 0xffffffff;
  for (let index = 0; index < bytes.length; index++) {
    const slot = (crcLow ^ bytes[index]) & 0xff;
    crcLow = (((crcLow >>> 8) | (crcHigh << 24)) ^ tableLow[slot]) >>> 0;
    crcHigh = ((crcHigh >>> 8) ^ tableHigh[slot]) >>> 0;
  }
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  view.setUint32(0, (crcHigh ^ 0xffffffff) >>> 0, false);
  view.setUint32(4, (crcLow ^ 0xffffffff) >>> 0, false);
  return out;
}
