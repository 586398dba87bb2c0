/**
 * Standard base64 (RFC 4648 §4, with padding), strict: decoding accepts only what
 * encoding produces (padding present, no whitespace, unused bits zero), so every byte
 * string has exactly one spelling and a decode–encode round trip is the identity.
 * Written without Buffer so it also runs in the browser client.
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ALPHABET_CODES = Uint8Array.from(ALPHABET, (char) => char.charCodeAt(0));
const PADDING = 0x3d; // "="
const asciiDecoder = new TextDecoder();
/** Digit of each ASCII code, -1 for codes outside the alphabet. */
const DIGIT_OF = new Int16Array(128).fill(-1);
for (let digit = 0; digit < ALPHABET.length; digit++) DIGIT_OF[ALPHABET.charCodeAt(digit)] = digit;

export function encodeBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  let written = 0;
  for (let index = 0; index < bytes.length; index += 3) {
    const remaining = bytes.length - index;
    const group = (bytes[index]! << 16) | ((bytes[index + 1] ?? 0) << 8) | (bytes[index + 2] ?? 0);
    out[written++] = ALPHABET_CODES[(group >> 18) & 63]!;
    out[written++] = ALPHABET_CODES[(group >> 12) & 63]!;
    out[written++] = remaining > 1 ? ALPHABET_CODES[(group >> 6) & 63]! : PADDING;
    out[written++] = remaining > 2 ? ALPHABET_CODES[group & 63]! : PADDING;
  }
  // The output is ASCII, which UTF-8 decodes one byte per character, in native code.
  return asciiDecoder.decode(out);
}

/** The bytes, or null if `text` is not canonical base64. */
export function decodeBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0) return null;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let written = 0;
  for (let index = 0; index < text.length; index += 4) {
    const groupPadding = index + 4 === text.length ? padding : 0;
    const first = digitAt(text, index);
    const second = digitAt(text, index + 1);
    const third = groupPadding === 2 ? paddingAt(text, index + 2) : digitAt(text, index + 2);
    const fourth = groupPadding >= 1 ? paddingAt(text, index + 3) : digitAt(text, index + 3);
    if ((first | second | third | fourth) < 0) return null;
    const group = (first << 18) | (second << 12) | (third << 6) | fourth;
    // Bits beyond the last whole byte must be zero, or two texts would give one value.
    if (groupPadding === 2 && (group & 0xffff) !== 0) return null;
    if (groupPadding === 1 && (group & 0xff) !== 0) return null;
    out[written++] = group >> 16;
    if (groupPadding < 2) out[written++] = (group >> 8) & 0xff;
    if (groupPadding < 1) out[written++] = group & 0xff;
  }
  return out;
}

function digitAt(text: string, index: number): number {
  const code = text.charCodeAt(index);
  return code < 128 ? DIGIT_OF[code]! : -1;
}

/** A padding position reads as digit 0 when it holds "=", else as invalid. */
function paddingAt(text: string, index: number): number {
  return text.charCodeAt(index) === PADDING ? 0 : -1;
}
