/**
 * Scenario: a real process is killed (SIGKILL) while its local store folds a large
 * overlay into the file in one transaction. Each restart must find the file exactly at
 * a batch boundary (all of the fold or none of it, never part), read back exactly the
 * batches up to that point, and, after replaying the rest as the engine replays the
 * log, hold every batch once: nothing lost, nothing applied twice.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { STREAM_BATCHES, STREAM_BATCH_DOCUMENTS, streamIds } from "./foldingStream.js";
import { DEPLOYMENT, localFixtures } from "./localFixtures.js";

const { dirs } = localFixtures();
const childScript = fileURLToPath(new URL("./foldingChild.ts", import.meta.url));
const KILLS = 3;

interface ChildRun {
  readonly lines: string[];
  readonly killed: boolean;
}

/** Runs the child; with `killAfterMs`, SIGKILLs it that long after it printed "applied". */
function runChild(path: string, killAfterMs: number | null): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", childScript, path], { stdio: ["ignore", "pipe", "pipe"] });
    const lines: string[] = [];
    let stderr = "";
    let killed = false;
    child.stdout.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        lines.push(line);
        if (line.startsWith("applied") && killAfterMs !== null) {
          setTimeout(() => {
            killed = child.kill("SIGKILL");
          }, killAfterMs);
        }
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code !== 0 && signal !== "SIGKILL") reject(new Error(`child exited with ${code}: ${stderr}`));
      else resolve({ lines, killed: killed && signal === "SIGKILL" });
    });
  });
}

/** Which batches the file holds, checked document by document and through both indexes. */
function batchesHeld(path: string): number {
  const store = LocalStore.open({ path, shard: 0, deploymentId: DEPLOYMENT });
  try {
    const seqno = store.meta().appliedSeqno;
    expect(store.durableMeta()).toEqual(store.meta());
    const ts = Math.max(0, seqno + 1);
    for (let batch = 0; batch < STREAM_BATCHES; batch++) {
      const found = store.getMany(streamIds(batch), ts).filter((version) => version !== null).length;
      expect(found, `documents of batch ${batch} with the file at seqno ${seqno}`).toBe(batch <= seqno ? STREAM_BATCH_DOCUMENTS : 0);
      expect(store.receipt("stream", batch) !== null).toBe(batch <= seqno);
    }
    const all = { start: new Uint8Array(0), end: null };
    expect(store.count(1, all, ts)).toBe((seqno + 1) * STREAM_BATCH_DOCUMENTS);
    expect(store.count(2, all, ts)).toBe((seqno + 1) * STREAM_BATCH_DOCUMENTS);
    expect(store.storedRows()).toEqual({
      documents: (seqno + 1) * STREAM_BATCH_DOCUMENTS,
      indexEntries: 2 * (seqno + 1) * STREAM_BATCH_DOCUMENTS,
      receipts: seqno + 1,
    });
    return seqno;
  } finally {
    store.close();
  }
}

describe("a process killed in the middle of a fold", () => {
  it(`restarts at a batch boundary and converges after ${KILLS} kills`, async () => {
    const path = dirs.file("killed.sqlite");
    const random = new SeededRandom(77);
    let held = -1;
    let killedMidFold = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      const run = await runChild(path, randomInt(random, 400));
      const before = held;
      held = batchesHeld(path);
      // One fold holds every batch after the file's position: all of it or none.
      expect([before, STREAM_BATCHES - 1]).toContain(held);
      if (run.killed && held === before) killedMidFold++;
    }
    const final = await runChild(path, null);
    expect(final.killed).toBe(false);
    expect(final.lines.at(-1)).toBe(`folded ${STREAM_BATCHES - 1}`);
    expect(batchesHeld(path)).toBe(STREAM_BATCHES - 1);
    // The kills must have landed before the fold committed at least once, or this proved nothing.
    expect(killedMidFold).toBeGreaterThan(0);
  });
});
