import { CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN, systemClock, type Clock } from "../base/index.js";
import type { EngineEvent } from "../shard/index.js";

/**
 * Prints engine events for a person at a terminal: progress of long work (restore,
 * replay while far behind, snapshot) at most once per interval, and every lifecycle change.
 */
const PROGRESS_INTERVAL_MS = 500;

/** `write`, but at most once per PROGRESS_INTERVAL_MS (for long work's progress lines). */
export function throttled(write: (line: string) => void, clock: Clock = systemClock): (line: string) => void {
  let lastAt = 0;
  return (line) => {
    const now = clock.nowMs();
    if (now - lastAt < PROGRESS_INTERVAL_MS) return;
    lastAt = now;
    write(line);
  };
}

export function progressReporter(write: (line: string) => void, clock: Clock = systemClock): (event: EngineEvent) => void {
  const progressLine = throttled(write, clock);
  return (event) => {
    switch (event.type) {
      case "progress": {
        const progress = event.progress;
        if (progress.phase === "restore") {
          progressLine(
            `shard ${event.shard}: restoring snapshot ${progress.seqno}: part ${progress.partsDone}/${progress.parts}, ` +
              `${progress.documents}/${progress.documentsTotal} documents`,
          );
        } else if (progress.tailHint - progress.seqno >= CATCH_UP_PROGRESS_LAG_SEGMENTS_MIN) {
          // Only while catching up: a follower that keeps up applies every segment as it lands.
          progressLine(`shard ${event.shard}: replaying segment ${progress.seqno} (tail hint ${progress.tailHint})`);
        }
        return;
      }
      case "acquired":
        write(`shard ${event.shard}: writer at epoch ${event.epoch} (fence at seqno ${event.fenceSeqno})`);
        return;
      case "relinquished":
        write(`shard ${event.shard}: lease of epoch ${event.epoch} released`);
        return;
      case "fenced":
      case "poisoned":
        write(`shard ${event.shard}: ${event.type}: ${event.error.message}`);
        return;
      case "snapshot":
        write(
          `shard ${event.shard}: snapshot at seqno ${event.pointer.seqno}: ${event.pointer.documents} documents, ` +
            `${event.pointer.parts} part(s), ${event.pointer.bytes} bytes`,
        );
        return;
      case "local-rebuilt":
        write(`shard ${event.shard}: WARNING: the local copy disagrees with the bucket and is rebuilt from it: ${event.reason}`);
        return;
      case "pruned":
      case "created":
      case "flushed":
        return;
      case "gc":
        for (const bad of event.report.malformedWatermarks) {
          write(`shard ${event.shard}: gc: ignoring the malformed watermark of consumer ${bad.consumerId}: ${bad.reason}`);
        }
        if (event.report.logStartAfter !== event.report.logStartBefore || event.report.snapshotObjectsDeleted > 0) {
          write(
            `shard ${event.shard}: gc: logStart ${event.report.logStartBefore} → ${event.report.logStartAfter}, ` +
              `${event.report.segmentsDeleted} segment(s) and ${event.report.snapshotObjectsDeleted} snapshot object(s) deleted`,
          );
        }
        return;
      case "driver-error":
        write(`shard ${event.shard}: ${event.driver} failed: ${String(event.error)}`);
        return;
    }
  };
}
