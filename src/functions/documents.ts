import { CairnError, DOCUMENT_BYTES_MAX } from "../base/index.js";
import {
  type DocumentId,
  encodeIndexKey,
  type Value,
  type ValueObject,
  decodeValueText,
  encodeValueText,
  utf8ByteLength,
} from "../model/index.js";
import type { IndexInfo } from "./catalog.js";
import { termFrequencies } from "./searchTerms.js";

/**
 * How a document is stored and indexed. The stored text is the document's fields plus
 * `_creationTime` in the lossless JSON encoding; `_id` is the row's key and is added back
 * when the document is read, so it is never stored twice.
 */
export type DocumentObject = ValueObject & { readonly _id: DocumentId; readonly _creationTime: number };

export function encodeDocument(document: DocumentObject): string {
  const { _id: id, ...stored } = document;
  const text = encodeValueText(stored);
  const bytes = utf8ByteLength(text);
  if (bytes > DOCUMENT_BYTES_MAX) {
    throw new CairnError("VALUE_TOO_LARGE", `document ${id} is ${bytes} bytes encoded, over the limit of ${DOCUMENT_BYTES_MAX}`, {
      details: { id, bytes, limit: DOCUMENT_BYTES_MAX },
    });
  }
  return text;
}

export function decodeDocument(id: DocumentId, text: string): DocumentObject {
  const stored = decodeValueText(text);
  if (typeof stored !== "object" || stored === null || Array.isArray(stored) || stored instanceof Uint8Array) {
    throw new CairnError("INTERNAL", `stored document ${id} is not an object`);
  }
  const creationTime = (stored as ValueObject)["_creationTime"];
  if (typeof creationTime !== "number") throw new CairnError("INTERNAL", `stored document ${id} has no _creationTime`);
  return { _id: id, ...(stored as ValueObject) } as DocumentObject;
}

/**
 * The document's key in `index`: its indexed field values, then creation time and id
 * (model/IndexKey's documentIndexKey, without parsing the id again: documents here carry
 * canonical ids, generated or read back from the store).
 */
export function indexKeyOf(index: IndexInfo, document: DocumentObject): Uint8Array {
  const values: (Value | undefined)[] = index.fields.map((path) => fieldAt(document, path));
  values.push(document._creationTime, document._id);
  return encodeIndexKey(values);
}

/**
 * Every key `document` has in `index`: one for an ordinary index; for a search index one
 * per distinct term of its search field (none when the field is not a string), keyed
 * [term, ...filter values, -frequency, _id] so that a term's documents with the same
 * filter values list most frequent first.
 */
export function indexKeysOf(index: IndexInfo, document: DocumentObject): Uint8Array[] {
  if (index.search === undefined) return [indexKeyOf(index, document)];
  const text = fieldAt(document, index.search.searchField);
  if (typeof text !== "string") return [];
  const filters = index.search.filterFields.map((path) => fieldAt(document, path));
  return [...termFrequencies(text).frequencies].map(([term, frequency]) => encodeIndexKey([term, ...filters, -frequency, document._id]));
}

/** The value at a dotted path; undefined when a step is missing or not an object. */
export function fieldAt(document: ValueObject, path: string): Value | undefined {
  let current: Value | undefined = document;
  for (const step of path.split(".")) {
    if (typeof current !== "object" || current === null || Array.isArray(current) || current instanceof Uint8Array) return undefined;
    current = Object.hasOwn(current, step) ? (current as ValueObject)[step] : undefined;
  }
  return current;
}
