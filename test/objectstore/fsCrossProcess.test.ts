/**
 * Scenario: four Node processes share one directory store and, 150 times each, race a
 * compare-and-swap increment of one counter object and a create of one key per round.
 * The directory store must be linearizable across processes: every successful casPut
 * wrote a distinct count, the counter ends at exactly the number of successes, and
 * every create key has exactly one winner whose body is stored.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { bytes, collect, expectBody } from "./conformance.js";

const WORKERS = 4;
const ROUNDS = 150;
const workerScript = fileURLToPath(new URL("./fsCasWorker.ts", import.meta.url));

interface WorkerReport {
  readonly workerId: string;
  readonly counterWrites: number[];
  readonly createdRounds: number[];
}

const directories: string[] = [];
afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

describe("FsObjectStore across processes", () => {
  it(`serializes casPut and create of ${WORKERS} racing processes`, async () => {
    const root = await mkdtemp(join(tmpdir(), "cairn-fs-xproc-"));
    directories.push(root);
    const store = new FsObjectStore(root);
    await store.create("counter", bytes(JSON.stringify({ count: 0, writer: "init" })));

    const reports = await Promise.all(
      Array.from({ length: WORKERS }, (_, workerId) => runWorker(root, String(workerId), ROUNDS)),
    );

    const writes = reports.flatMap((report) => report.counterWrites).sort((a, b) => a - b);
    expect(writes).toEqual(Array.from({ length: writes.length }, (_, index) => index + 1));
    const counter = JSON.parse(new TextDecoder().decode(expectBody(await store.get("counter")).body)) as { count: number };
    expect(counter.count).toBe(writes.length);
    expect(writes.length).toBeGreaterThanOrEqual(ROUNDS);

    for (let round = 0; round < ROUNDS; round++) {
      const winners = reports.filter((report) => report.createdRounds.includes(round));
      expect(winners, `round ${round}`).toHaveLength(1);
      const stored = expectBody(await store.get(`created/${round}`));
      expect(new TextDecoder().decode(stored.body)).toBe(`worker ${winners[0]?.workerId}`);
    }
    expect(await collect(store.list("created/"))).toHaveLength(ROUNDS);
    await store.close();
  });
});

function runWorker(root: string, workerId: string, rounds: number): Promise<WorkerReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", workerScript, root, workerId, String(rounds)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`worker ${workerId} exited with ${code}: ${stderr}`));
      else resolve(JSON.parse(stdout.trim()) as WorkerReport);
    });
  });
}
