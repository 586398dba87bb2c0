import { FS_NAME_CHUNK_CHARS_MAX } from "../base/index.js";

/**
 * How the directory store names an object key on disk.
 *
 * Invariants:
 * - Every valid key maps to exactly one relative path and back (a bijection), and that
 *   path stays inside the root: no component is empty, `.`, `..` or starts with `.`.
 * - A key's `/`-separated segments become directories; the last one becomes a file whose
 *   name ends in `@`. So key `a` (file `a@`) and key `a/b` (directory `a`, file `b@`) can
 *   both exist.
 * - Component names use only `a-z 0-9 _ - .` and `%XX` escapes (uppercase hex of the UTF-8
 *   bytes), so they are equal on case-insensitive and normalizing file systems (macOS,
 *   Windows) exactly when the keys are equal. A `.` starting a name is escaped, which
 *   keeps the store's own `.tmp` and `.locks` directories apart from every key.
 * - An empty segment (`a//b`, a leading or trailing `/`) is written `%`, a name no
 *   escape produces.
 * - A segment whose encoding exceeds FS_NAME_CHUNK_CHARS_MAX is split into chunks at
 *   escape boundaries; every chunk but the last is a directory whose name ends in `+`.
 */

const OBJECT_MARK = "@";
const CONTINUATION_MARK = "+";
const EMPTY_SEGMENT = "%";
const ESCAPED_DOT = "%2E";
const PLAIN_BYTE = /^[a-z0-9_.-]$/;
const ENCODED_CHUNK = /^(?:[a-z0-9_.-]|%[0-9A-F]{2})+$/;

/** The path components (relative to the root) that hold `key`. */
export function pathComponentsForKey(key: string): string[] {
  const segments = key.split("/");
  const components: string[] = [];
  segments.forEach((segment, index) => {
    const chunks = encodeSegmentChunks(segment);
    const last = index === segments.length - 1;
    chunks.forEach((chunk, chunkIndex) => {
      if (chunkIndex < chunks.length - 1) components.push(chunk + CONTINUATION_MARK);
      else components.push(last ? chunk + OBJECT_MARK : chunk);
    });
  });
  return components;
}

/**
 * The directory components under which every key starting with `prefix` lives: the
 * segments of `prefix` that are complete (followed by a `/`).
 */
export function directoryComponentsForPrefix(prefix: string): string[] {
  const lastSlash = prefix.lastIndexOf("/");
  if (lastSlash < 0) return [];
  const components: string[] = [];
  for (const segment of prefix.slice(0, lastSlash).split("/")) {
    const chunks = encodeSegmentChunks(segment);
    chunks.forEach((chunk, chunkIndex) => {
      components.push(chunkIndex < chunks.length - 1 ? chunk + CONTINUATION_MARK : chunk);
    });
  }
  return components;
}

/**
 * The key stored at these path components (relative to the root), or null when the path
 * is not one this module writes (a foreign file, a non-canonical escape, a directory).
 */
export function keyForPathComponents(components: readonly string[]): string | null {
  const segments: string[] = [];
  let pending = "";
  for (const [index, name] of components.entries()) {
    const last = index === components.length - 1;
    if (name.startsWith(".")) return null;
    let text: string;
    if (last) {
      if (!name.endsWith(OBJECT_MARK)) return null;
      text = name.slice(0, -OBJECT_MARK.length);
    } else if (name.endsWith(CONTINUATION_MARK)) {
      pending += name.slice(0, -CONTINUATION_MARK.length);
      continue;
    } else {
      text = name;
    }
    const segment = decodeSegment(pending + text);
    if (segment === null) return null;
    segments.push(segment);
    pending = "";
  }
  if (segments.length === 0) return null;
  const key = segments.join("/");
  // One path per key: anything spelled differently from what we write is not ours.
  const canonical = pathComponentsForKey(key);
  return canonical.length === components.length && canonical.every((name, index) => name === components[index]) ? key : null;
}

/** Decodes the encoded text of a whole segment; null for bad escapes or invalid UTF-8. */
function decodeSegment(encoded: string): string | null {
  if (encoded === EMPTY_SEGMENT) return "";
  if (!ENCODED_CHUNK.test(encoded)) return null;
  const bytes: number[] = [];
  for (let index = 0; index < encoded.length; ) {
    if (encoded[index] === "%") {
      bytes.push(Number.parseInt(encoded.slice(index + 1, index + 3), 16));
      index += 3;
    } else {
      bytes.push(encoded.charCodeAt(index));
      index += 1;
    }
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

/** The escaped form of one segment, split into name-sized chunks. */
function encodeSegmentChunks(segment: string): string[] {
  if (segment.length === 0) return [EMPTY_SEGMENT];
  const units = encodeSegmentUnits(segment);
  const chunks: string[] = [];
  let chunk = "";
  for (const plainOrEscaped of units) {
    let unit = plainOrEscaped;
    if (chunk.length + unit.length > FS_NAME_CHUNK_CHARS_MAX) {
      chunks.push(chunk);
      chunk = "";
    }
    // A name starting with "." would be hidden, or "." / ".." themselves.
    if (chunk === "" && unit === ".") unit = ESCAPED_DOT;
    chunk += unit;
  }
  chunks.push(chunk);
  return chunks;
}

/** One entry per UTF-8 byte: the byte itself when it is plain, else its `%XX` escape. */
function encodeSegmentUnits(segment: string): string[] {
  return [...Buffer.from(segment, "utf8")].map((byte) => {
    const character = String.fromCharCode(byte);
    return PLAIN_BYTE.test(character) ? character : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  });
}
