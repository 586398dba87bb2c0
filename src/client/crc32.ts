/**
 * CRC-32 (IEEE 802.3, the zlib and PNG polynomial) of a string's UTF-16 code units as
 * little-endian byte pairs. The outbox uses it to notice a torn or altered record, not
 * to resist an attacker: whoever can write the record can also fix its checksum.
 */

const TABLE = buildTable();

export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let at = 0; at < text.length; at++) {
    const unit = text.charCodeAt(at);
    crc = TABLE[(crc ^ unit) & 0xff]! ^ (crc >>> 8);
    crc = TABLE[(crc ^ (unit >>> 8)) & 0xff]! ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function buildTable(): Uint32Array {
  const table = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let value = byte;
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? 0xedb88320 ^ (value >>> 1) : value >>> 1;
    table[byte] = value >>> 0;
  }
  return table;
}
