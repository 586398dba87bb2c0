/**
 * The object-store layer's public surface. Layers above depend on the ObjectStore
 * interface and open stores by URL; adapters' internals (key paths, locks, the S3
 * failure table) stay inside this folder.
 */
export type { GetOptions, GetResult, ListEntry, ListOptions, ObjectStore, PutResult } from "./ObjectStore.js";
export { assertValidKey, compareKeys } from "./keys.js";
export { MemoryObjectStore } from "./MemoryObjectStore.js";
export { FsObjectStore, type FsObjectStoreOptions } from "./FsObjectStore.js";
export {
  S3ObjectStore,
  type IfMatchEtagForm,
  type S3ClientOverrides,
  type S3Credentials,
  type S3ObjectStoreOptions,
} from "./S3ObjectStore.js";
export { inheritParent, openObjectStore, type OpenObjectStoreOptions } from "./openObjectStore.js";
export {
  encodeParentLink,
  InheritingObjectStore,
  PARENT_LINK_FORMAT,
  PARENT_LINK_KEY,
  prefixRange,
  readParentLink,
  type KeyRange,
  type ParentLink,
} from "./InheritingObjectStore.js";
export { parseStoreUrl, STORE_URL_FORMS, storeUrlWithin, type StoreLocation } from "./parseStoreUrl.js";
export { assertConditionalWrites, PROBE_PREFIX, type ConditionalWritesReport } from "./assertConditionalWrites.js";
export { defaultRetryPolicy, retryTransient, type RetryPolicy } from "./retry.js";
export { ObservedObjectStore, type StoreCall, type StoreOperation } from "./ObservedObjectStore.js";
export { PrefixedObjectStore } from "./PrefixedObjectStore.js";
// A directory used by one process at a time (a node's --local), on this machine's process liveness.
export { ProcessLockFile } from "./ProcessLockFile.js";
