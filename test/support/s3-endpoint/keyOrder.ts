/**
 * S3 orders keys by their UTF-8 bytes, which is Unicode code point order. JavaScript
 * compares strings by UTF-16 code units, which disagrees for characters above U+FFFF
 * (surrogates, 0xD800–0xDFFF) against U+E000–U+FFFF. Shifting code units at the first
 * difference restores code point order without encoding either string.
 */
export function compareUtf8(left: string, right: string): number {
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const leftUnit = left.charCodeAt(index);
    const rightUnit = right.charCodeAt(index);
    if (leftUnit !== rightUnit) return codePointRank(leftUnit) - codePointRank(rightUnit);
  }
  return left.length - right.length;
}

/** Moves surrogates above U+E000–U+FFFF so that code units sort like code points. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
