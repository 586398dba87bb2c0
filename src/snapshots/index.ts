/** Snapshot writer and reader (streamed, chunked), and restore into a local store. */
export { readSnapshotParts, readSnapshotPayloads, restoreSnapshot, SNAPSHOT_FETCH_CONCURRENCY, type RestoreProgress } from "./restoreSnapshot.js";
export { snapshotPartInvalid, type EncodedSnapshotPayload } from "./SnapshotPart.js";
export { writeSnapshot, type EncodedRows, type SnapshotChunk, type SnapshotSource } from "./writeSnapshot.js";
export { readSnapshotRecords, recordSnapshot, snapshotRecordKey, type SnapshotRecord, type SnapshotRecordScan } from "./SnapshotRecords.js";
