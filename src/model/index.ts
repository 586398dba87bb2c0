/**
 * The data model's public surface: values and their lossless JSON encoding, document
 * ids, order-preserving index keys, key ranges, the interval index, shard routing and
 * node ids. Shard routing hashes with node:crypto, so a browser bundle cannot hold this
 * index: the client imports the value modules it needs directly (test/support/houseRules).
 */
export type { Value, ValueKind, ValueObject } from "./Value.js";
export { INT64_MAX, INT64_MIN, VALUE_KINDS, formatPath, isValue, validateValue } from "./Value.js";
export type { JsonValue } from "./ValueJson.js";
export { decodeValue, decodeValueText, encodeValue, encodeValueText, utf8ByteLength } from "./ValueJson.js";
export { compareNumbers, compareStrings, compareValues } from "./compareValues.js";
export { bytesEqual, compareBytes } from "./compareBytes.js";
export { decodeBase64, encodeBase64 } from "./Base64.js";
export type { DocumentId, ParsedDocumentId } from "./DocumentId.js";
export {
  TABLE_NUMBER_MAX,
  documentIdOfTable,
  encodeDocumentId,
  isDocumentId,
  newDocumentId,
  parseDocumentId,
} from "./DocumentId.js";
export type { ClientReceipt, DocumentRevision, IndexUpdate } from "./Revision.js";
export type { DocumentIndexKey } from "./IndexKey.js";
export {
  decodeDocumentIndexKey,
  decodeIndexKey,
  documentIndexKey,
  encodeIndexKey,
  indexKeyPrefix,
  validateIndexKey,
} from "./IndexKey.js";
export type { IndexBound, IndexBounds } from "./IndexRange.js";
export { indexRange } from "./IndexRange.js";
export type { KeyRange } from "./KeyRange.js";
export {
  documentKey,
  documentKeyOfCanonical,
  fullRange,
  indexKeyspace,
  isEmptyRange,
  keyRange,
  pointRange,
  prefixEnd,
  prefixRange,
  rangeContains,
  rangesOverlap,
  successorKey,
  tableKeyspace,
  validateKeyRange,
} from "./KeyRange.js";
export type { IntervalHandle } from "./IntervalIndex.js";
export { IntervalIndex } from "./IntervalIndex.js";
export { checkDocumentIdOfTable, documentIdSpan, isCanonicalSpelling, parseDocumentIdOfTable, routeOfId, tableNumberOfId } from "./DocumentId.js";
export { compareUtf8 } from "./compareBytes.js";
export { compareKeyStrings, keyString } from "./keyString.js";
export { ROUTE_BYTES, routeOfKey, shardFor, shardOfRoute } from "./shardFor.js";
export { withoutUndefinedFields } from "./withoutUndefinedFields.js";
export { isNodeId, NODE_ID_FORM, NODE_ID_PATTERN } from "./NodeId.js";
