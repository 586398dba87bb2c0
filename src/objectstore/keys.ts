import { CairnError, STORE_KEY_BYTES_MAX } from "../base/index.js";

/** Characters XML 1.0 cannot carry (or rewrites): C0 controls, DEL, U+FFFE, U+FFFF. */
const XML_UNSAFE = /[\u0000-\u001f\u007f\ufffe\uffff]/;

/**
 * Rejects keys no adapter can store identically: empty, too long, not valid UTF-8 text,
 * or holding control characters.
 */
export function assertValidKey(key: string): void {
  if (typeof key !== "string" || key.length === 0) {
    throw new CairnError("STORE_KEY_INVALID", "object key must be a non-empty string", { details: { key } });
  }
  // Lone surrogates do not survive a UTF-8 round trip; S3 would store a different key.
  if (Buffer.from(key, "utf8").toString("utf8") !== key) {
    throw new CairnError("STORE_KEY_INVALID", "object key contains unpaired surrogates", { details: { key } });
  }
  // S3 lists keys in XML 1.0, which cannot carry control characters and folds \r into \n.
  if (XML_UNSAFE.test(key)) {
    throw new CairnError("STORE_KEY_INVALID", "object key contains control characters", { details: { key } });
  }
  if (Buffer.byteLength(key, "utf8") > STORE_KEY_BYTES_MAX) {
    throw new CairnError("STORE_KEY_INVALID", `object key is longer than ${STORE_KEY_BYTES_MAX} bytes`, {
      details: { key },
    });
  }
}

/** S3's key order: UTF-8 byte order (not JavaScript's UTF-16 code-unit order). */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}
