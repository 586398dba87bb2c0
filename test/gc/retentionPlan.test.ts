/**
 * Model test of retention's choice (gc/retentionPlan): random histories of recorded
 * snapshots, a current snapshot, random cutoffs and spacings. Whatever they are, every ts
 * from the cutoff on stays restorable from a kept snapshot whose log is kept, the current
 * snapshot and anything newer than it are never doomed, what is kept within the window is
 * spaced as asked (so the copies are bounded), and with retention off only the current
 * snapshot is kept and the log is not held back.
 */
import { describe, expect, it } from "vitest";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { planRetention } from "../../src/gc/retentionPlan.js";
import type { SnapshotPointer } from "../../src/manifest/Manifest.js";
import type { SnapshotRecord } from "../../src/snapshots/SnapshotRecords.js";

function pointer(seqno: number, ts: number, attempt: string): SnapshotPointer {
  return { seqno, ts, epoch: 1, hash: "h", key: `s0/snap/${String(seqno).padStart(20, "0")}/${attempt}/`, parts: 1, bytes: 10, sha256: "0".repeat(64), documents: 1 };
}

function history(random: SeededRandom): { records: SnapshotRecord[]; current: SnapshotPointer | null } {
  const records: SnapshotRecord[] = [];
  let seqno = 0;
  let ts = 1_000;
  const count = randomInt(random, 25);
  for (let i = 0; i < count; i++) {
    seqno += 1 + randomInt(random, 50);
    ts += 1 + randomInt(random, 5_000);
    const snapshot = pointer(seqno, ts, `1-a${i}`);
    records.push({ key: `s0/snapshots/${String(seqno).padStart(20, "0")}-1-a${i}`, pointer: snapshot });
  }
  if (records.length === 0) return { records, current: null };
  // The current one is some record (or, from an older build, one without a record); maybe attempts above it.
  const currentIndex = randomInt(random, records.length);
  const current = records[currentIndex]!.pointer;
  if (randomInt(random, 5) === 0) records.splice(currentIndex, 1);
  return { records, current };
}

describe("retention plan", () => {
  it("keeps every ts from the cutoff on restorable, spaced, and never dooms the current snapshot or newer attempts", () => {
    for (let seed = 1; seed <= 1_500; seed++) {
      const random = new SeededRandom(seed);
      const { records, current } = history(random);
      const spacingMicros = 1 + randomInt(random, 8_000);
      const cutoffTs = randomInt(random, 4) === 0 ? null : randomInt(random, 140_000);
      const plan = planRetention({ current, records, cutoffTs, spacingMicros });
      const doomed = new Set(plan.doomedRecordKeys);
      const context = `seed ${seed}`;

      if (current !== null) expect(plan.keptSnapshots.has(current.key), context).toBe(true);
      for (const record of records) {
        const above = current === null || record.pointer.seqno > current.seqno;
        if (above) expect(plan.keptSnapshots.has(record.pointer.key), context).toBe(true);
        expect(doomed.has(record.key), context).toBe(!plan.keptSnapshots.has(record.pointer.key));
      }
      const settled = records.map((record) => record.pointer).filter((p) => current !== null && p.seqno <= current.seqno);
      if (cutoffTs === null) {
        expect(plan.logStartMax, context).toBeNull();
        for (const p of settled) expect(plan.keptSnapshots.has(p.key), context).toBe(p.key === current?.key);
        continue;
      }
      const candidates = current !== null && !settled.some((p) => p.key === current.key) ? [...settled, current] : settled;
      const old = candidates.filter((p) => p.ts <= cutoffTs).sort((a, b) => a.seqno - b.seqno);
      const base = old.at(-1) ?? null;
      expect(plan.base, context).toEqual(base);
      expect(plan.logStartMax, context).toBe(base === null ? 0 : base.seqno + 1);
      if (base !== null) {
        // Every ts from the cutoff on: a kept snapshot at or before it, its log kept (seqno >= base's).
        for (let probe = cutoffTs; probe <= cutoffTs + 150_000; probe += 997) {
          const from = candidates.filter((p) => plan.keptSnapshots.has(p.key) && p.ts <= probe && p.seqno >= base.seqno);
          expect(from.length, `${context} ts ${probe}`).toBeGreaterThan(0);
        }
        for (const p of candidates) if (p.seqno < base.seqno) expect(plan.keptSnapshots.has(p.key), context).toBe(false);
      } else {
        // Nothing is old enough: the oldest snapshot stays, and the log is not collected.
        const oldest = [...candidates].sort((a, b) => a.seqno - b.seqno)[0];
        if (oldest !== undefined) expect(plan.keptSnapshots.has(oldest.key), context).toBe(true);
      }
      // Spaced: between kept snapshots of the window (the current one aside), at least spacingMicros.
      const kept = candidates.filter((p) => plan.keptSnapshots.has(p.key) && p.key !== current?.key).sort((a, b) => a.seqno - b.seqno);
      for (let i = 1; i < kept.length; i++) expect(kept[i]!.ts - kept[i - 1]!.ts, context).toBeGreaterThanOrEqual(spacingMicros);
    }
  });
});
