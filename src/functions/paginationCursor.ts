import { CairnError } from "../base/index.js";

/**
 * The opaque cursor of `paginate`: which index and order it belongs to, and the key of
 * the last row of the page (null once the range is done). The next page starts strictly
 * after that key. Index keys are unique (they end with creation time and id), so a row
 * inserted or deleted between pages never shifts the position: every row that exists
 * throughout is returned exactly once, rows inserted behind the cursor are not. A
 * splitCursor is the same kind of position (after a row in the middle of a pinned page).
 */
export interface PaginationPosition {
  readonly indexId: number;
  readonly order: "asc" | "desc";
  /** The last key returned; null: the range was exhausted. */
  readonly afterKey: Uint8Array | null;
}

const CURSOR_VERSION = 1;
const CURSOR_CHARS_MAX = 8192;

export function encodeCursor(position: PaginationPosition): string {
  const body = {
    v: CURSOR_VERSION,
    i: position.indexId,
    o: position.order,
    k: position.afterKey === null ? null : Buffer.from(position.afterKey).toString("base64url"),
  };
  return Buffer.from(JSON.stringify(body)).toString("base64url");
}

/** INVALID_ARGUMENT for anything `encodeCursor` did not make, or a cursor of another index or order. */
export function decodeCursor(cursor: unknown, expected: { indexId: number; order: "asc" | "desc" }): PaginationPosition {
  if (typeof cursor !== "string" || cursor.length === 0 || cursor.length > CURSOR_CHARS_MAX || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw cursorInvalid("not a pagination cursor");
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw cursorInvalid("not a pagination cursor");
  }
  const { v, i, o, k } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (v !== CURSOR_VERSION || !Number.isSafeInteger(i) || (o !== "asc" && o !== "desc") || (k !== null && typeof k !== "string")) {
    throw cursorInvalid("not a pagination cursor");
  }
  if (i !== expected.indexId || o !== expected.order) {
    throw cursorInvalid("the cursor belongs to another query (a different index or order)");
  }
  return { indexId: i as number, order: o, afterKey: k === null ? null : new Uint8Array(Buffer.from(k as string, "base64url")) };
}

function cursorInvalid(reason: string): CairnError {
  return new CairnError("INVALID_ARGUMENT", `invalid pagination cursor: ${reason}`);
}
