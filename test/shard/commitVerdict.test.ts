/**
 * Scenario: the verify step's decision table (DESIGN.md §4 commit), fed plain manifests:
 * a created segment at or above logStart is durable; below it, the next epoch's recorded
 * fence decides both ways, a later epoch's fence only proves exclusion, and anything else
 * is an unknown outcome — never a definite failure of a write that may be durable.
 */
import { describe, expect, it } from "vitest";
import { initialManifestFields, type FenceRecord, type Manifest } from "../../src/manifest/Manifest.js";
import { judgeCreatedSegment } from "../../src/shard/commitVerdict.js";

function manifest(fields: { epoch: number; logStart: number; fences?: FenceRecord[] }): Manifest {
  return { ...initialManifestFields("d".repeat(32), 0), version: 1, nonce: "n", fences: [], ...fields };
}

describe("judgeCreatedSegment", () => {
  it("a slot at or above logStart holds our durable segment; a newer epoch means stop after acknowledging", () => {
    expect(judgeCreatedSegment(manifest({ epoch: 3, logStart: 10 }), 10, 3)).toEqual({ kind: "durable", newerEpoch: false });
    expect(judgeCreatedSegment(manifest({ epoch: 4, logStart: 2 }), 10, 3)).toEqual({ kind: "durable", newerEpoch: true });
  });

  it("below logStart, the next epoch's fence decides: below it included, at or above it lost", () => {
    const fences = [{ epoch: 4, seqno: 12 }, { epoch: 6, seqno: 20 }];
    const m = manifest({ epoch: 6, logStart: 25, fences });
    expect(judgeCreatedSegment(m, 11, 3)).toEqual({ kind: "durable", newerEpoch: true });
    expect(judgeCreatedSegment(m, 12, 3)).toMatchObject({ kind: "lost" });
    expect(judgeCreatedSegment(m, 19, 3)).toMatchObject({ kind: "lost" });
  });

  it("without the next epoch's record, a later fence proves only exclusion; otherwise the outcome is unknown", () => {
    const m = manifest({ epoch: 6, logStart: 25, fences: [{ epoch: 6, seqno: 20 }] });
    expect(judgeCreatedSegment(m, 20, 4)).toMatchObject({ kind: "lost" });
    expect(judgeCreatedSegment(m, 21, 4)).toMatchObject({ kind: "lost" });
    expect(judgeCreatedSegment(m, 19, 4)).toMatchObject({ kind: "unknown" });
    expect(judgeCreatedSegment(manifest({ epoch: 6, logStart: 25 }), 3, 4)).toMatchObject({ kind: "unknown" });
  });
});
