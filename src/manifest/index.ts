/**
 * The manifest layer's public surface: the generic CAS object, the shard manifest with its
 * leases and epochs, globals, the schema catalog, the reshard lock and the bucket layout.
 */
export { CasObject, jsonCasCodec, type CasFields, type CasSnapshot } from "./CasObject.js";
export { GLOBALS_FORMAT, globalsObject, openGlobals, RETENTION_MS_DEFAULT, RETENTION_MS_MAX, type Globals } from "./Globals.js";
export { firstManifestFields, initialManifestFields, isLeaseLive, MANIFEST_FORMAT, manifestCodec, snapshotPointerSchema, type FenceRecord, type Manifest, type SnapshotPointer } from "./Manifest.js";
export { claimLayoutForWriting, dropRetiredGeneration, HeldReshardLock, isReshardLockHeld, reshardInProgress } from "./ReshardLock.js";
export { SCHEMA_CATALOG_FORMAT, schemaCatalogObject, type CatalogIndex, type CatalogTable, type SchemaCatalog } from "./SchemaCatalog.js";
export { ShardManifest, type LeaseOwner } from "./ShardManifest.js";
export { bucketLayout, parseSegmentSeqno, parseSnapshotSeqno, snapshotAttemptOf } from "./bucketLayout.js";
export { generationKeyPrefixes, generationPrefix, generationStore } from "./layoutGeneration.js";
export {
  BRANCH_ID_PATTERN,
  BRANCH_REGISTRATION_FORMAT,
  branchRegistrationObject,
  heldGenerations,
  holdsOf,
  holdsSegment,
  NO_HOLDS,
  readBranchRegistry,
  type BranchRegistration,
  type HeldShard,
  type RegistryScan,
  type ShardHolds,
} from "./BranchRegistry.js";
