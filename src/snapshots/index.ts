/** Snapshot writer and reader (streamed, chunked), and restore into a local store. */
export { readSnapshotParts, restoreSnapshot, SNAPSHOT_FETCH_CONCURRENCY, type RestoreProgress } from "./restoreSnapshot.js";
export { writeSnapshot } from "./writeSnapshot.js";
export { readSnapshotRecords, recordSnapshot, snapshotRecordKey, type SnapshotRecord, type SnapshotRecordScan } from "./SnapshotRecords.js";
