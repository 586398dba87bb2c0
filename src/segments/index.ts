/** The segment format and the log: encoding, checksum chain, validation and reading. */
export { ByteWriter } from "./ByteWriter.js";
export { judgeSegment, LOG_START, LogValidator, type LogPosition, type Verdict } from "./LogValidator.js";
export { encodeSegment, type Segment, type SegmentKind } from "./Segment.js";
export { decodeFramed, decodeFramedOffThread, encodeFramed, encodeFramedOffThread, type FramedObject } from "./framedObject.js";
export { readLog, readSegment, type DeliveredSegment } from "./logReader.js";
export { decodeRecords, EMPTY_RECORD_BATCH, RecordScanner, writeIndexUpdate, writeReceipt, writeRevision, type RecordBatch } from "./recordCodec.js";
