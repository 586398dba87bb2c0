/**
 * Scenario: processes on one machine contend for the key locks of one directory store
 * (issue 7, item 2.8). A lock is broken only when its holder is provably gone — its
 * process exited, or its pid now belongs to a process that started at another time —
 * never for its age: a live holder (this process or a real child process) keeps its lock
 * however far a waiter's clock moves, and the waiter times out naming it, or proceeds
 * once it releases. End to end: a casPut paused between its etag check and its rename
 * while a second store, its clock an hour ahead, races it on the same etag — exactly one
 * of them succeeds. Locks from another host are never broken; torn lock files are broken
 * once they are older than FS_LOCK_STALE_MS.
 *
 * Waiters run on a ManualClock, so no test waits for real time to pass: each step lets
 * the waiter run until it sleeps (bounded by event-loop turns), then moves its clock.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { FS_LOCK_STALE_MS, FS_LOCK_WAIT_MS_MAX } from "../../src/base/limits.js";
import { processStartTime } from "../../src/objectstore/processLiveness.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { eventually, Gate } from "../support/Gate.js";
import { SkewedClock } from "../support/SkewedClock.js";
import { bytes, expectBody } from "./conformance.js";

const workerScript = fileURLToPath(new URL("./fsLockWorker.ts", import.meta.url));
const ONE_HOUR_MS = 3_600_000;
const ONE_DAY_MS = 24 * ONE_HOUR_MS;
const hasProcStartTimes = existsSync("/proc/self/stat");

const directories: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-fs-locks-"));
  directories.push(directory);
  return directory;
}

const lockPathOf = (root: string, key: string) =>
  join(root, ".locks", createHash("sha256").update(key, "utf8").digest("hex"));

interface RecordFields {
  readonly pid: number;
  readonly hostname?: string;
  readonly processStartTime: string | null;
  readonly acquiredAtMs: number;
}

/** Places a lock record as another process would have written it. */
const writeLock = (root: string, key: string, fields: RecordFields) =>
  writeFile(lockPathOf(root, key), JSON.stringify({ hostname: hostname(), ...fields, token: `foreign-${fields.pid}` }));

describe("FsKeyLocks: a live holder is never broken", () => {
  it("keeps a live child process's lock however far the waiter's clock moves; the waiter times out naming it", async () => {
    const root = await temporaryDirectory();
    const { etag } = await new FsObjectStore(root).create("k", bytes("v1"));
    const holder = startHolder(root, "k", "hold");
    await holder.locked;
    const lockPath = lockPathOf(root, "k");
    const heldLock = await readFile(lockPath, "utf8");
    expect(JSON.parse(heldLock)).toMatchObject({ pid: holder.pid, hostname: hostname() });
    if (hasProcStartTimes) {
      expect(JSON.parse(heldLock).processStartTime).toBe(await processStartTime(holder.pid));
    }

    const clock = new ManualClock(Date.now());
    const waiter = track(new FsObjectStore(root, { clock }).casPut("k", bytes("waiter"), etag));
    await untilSleepingOrSettled(clock, waiter);
    expect(waiter.settled).toBe(false);

    // Past the old stale age: the holder is alive, so the waiter keeps waiting.
    clock.advance(FS_LOCK_STALE_MS + 1_000);
    await untilSleepingOrSettled(clock, waiter);
    expect(waiter.settled).toBe(false);
    expect(await readFile(lockPath, "utf8")).toBe(heldLock);

    clock.advance(ONE_DAY_MS);
    await eventually(() => waiter.settled);
    expect(waiter.error).toMatchObject({ code: "STORE_TRANSIENT" });
    const message = (waiter.error as Error).message;
    expect(message).toContain(`pid ${holder.pid} on host ${hostname()}`);
    expect(message).toContain(`delete ${lockPath}`);
    expect(message).toContain(String(FS_LOCK_WAIT_MS_MAX));
    expect(await readFile(lockPath, "utf8")).toBe(heldLock);

    holder.release();
    expect(await holder.exited).toBe(0);
    expect(holder.output()).toContain("done");
    expect(new TextDecoder().decode(expectBody(await new FsObjectStore(root).get("k")).body)).toBe(
      `written by child ${holder.pid}`,
    );
  });

  it("never lets two casPuts on one etag both succeed when the first pauses before its rename", async () => {
    // A's casPut has checked the etag and its lock; it pauses just before the rename.
    // B, on a clock an hour ahead, sees a lock "an hour old" held by a live process.
    const root = await temporaryDirectory();
    const seed = new FsObjectStore(root);
    const { etag } = await seed.create("k", bytes("v1"));
    const clockB = new ManualClock(Date.now());
    const skewedB = new SkewedClock(clockB, 0);
    const storeB = new FsObjectStore(root, { clock: skewedB });
    // B's first write runs its once-per-store sweep of leftover temporary files, judged by
    // B's clock at that moment; it runs before B's clock steps, or it would take A's
    // in-flight file for an hour-old leftover (the sweep is not what this test is about).
    await storeB.create("warm-up", bytes("B"));
    skewedB.offsetMs = ONE_HOUR_MS;
    const paused = new Gate();
    const resume = new Gate();
    const storeA = new FsObjectStore(root, {
      beforeCasRename: async () => {
        paused.open();
        await resume.promise;
      },
    });
    const writeA = track(storeA.casPut("k", bytes("written by A"), etag));
    await paused.promise;

    const writeB = track(storeB.casPut("k", bytes("written by B"), etag));
    await untilSleepingOrSettled(clockB, writeB);
    expect(writeB.settled).toBe(false);
    // Let B wait past the stale age on its own clock too (still within its wait bound).
    clockB.advance(FS_LOCK_STALE_MS + 1_000);
    await untilSleepingOrSettled(clockB, writeB);
    expect(writeB.settled).toBe(false);

    resume.open();
    await eventually(() => writeA.settled);
    expect(writeA.error).toBeUndefined();
    // B keeps polling until the lock is free, then finds A's etag: it lost the race.
    while (!writeB.settled) {
      clockB.advanceToNextSleeper();
      await untilSleepingOrSettled(clockB, writeB);
    }
    expect(writeB.error).toMatchObject({ code: "CAS_CONFLICT" });
    expect(expectBody(await seed.get("k")).body).toEqual(bytes("written by A"));
  });

  it("never breaks a lock taken on another host, however old; the waiter names that host", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root);
    const { etag } = await store.create("k", bytes("v1"));
    await writeLock(root, "k", {
      pid: exitedPid(),
      hostname: "another-host.example",
      processStartTime: null,
      acquiredAtMs: Date.now() - ONE_DAY_MS,
    });
    const clock = new ManualClock(Date.now());
    const waiter = track(new FsObjectStore(root, { clock }).casPut("k", bytes("v2"), etag));
    await untilSleepingOrSettled(clock, waiter);
    expect(waiter.settled).toBe(false);
    clock.advance(FS_LOCK_WAIT_MS_MAX);
    await eventually(() => waiter.settled);
    expect(waiter.error).toMatchObject({ code: "STORE_TRANSIENT" });
    expect((waiter.error as Error).message).toContain("on host another-host.example (another host");
    expect((waiter.error as Error).message).toContain(`delete ${lockPathOf(root, "k")}`);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v1"));
  });
});

describe("FsKeyLocks: a gone holder's lock is broken", () => {
  it("breaks the lock of a child process that exited while holding it", async () => {
    const root = await temporaryDirectory();
    const { etag } = await new FsObjectStore(root).create("k", bytes("v1"));
    const holder = startHolder(root, "k", "exit");
    expect(await holder.exited).toBe(0);
    expect(JSON.parse(await readFile(lockPathOf(root, "k"), "utf8"))).toMatchObject({ pid: holder.pid });

    // The clock never moves: the lock is broken because its holder is gone, not for age.
    const store = new FsObjectStore(root, { clock: new ManualClock(Date.now()) });
    await store.casPut("k", bytes("v2"), etag);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v2"));
    await expect(stat(lockPathOf(root, "k"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("breaks the lock of a reaped pid recorded without a start time", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root, { clock: new ManualClock(Date.now()) });
    const { etag } = await store.create("k", bytes("v1"));
    await writeLock(root, "k", { pid: exitedPid(), processStartTime: null, acquiredAtMs: Date.now() });
    await store.casPut("k", bytes("v2"), etag);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v2"));
  });

  it.runIf(hasProcStartTimes)("breaks a lock whose live pid started at another time (a reused pid)", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root, { clock: new ManualClock(Date.now()) });
    const { etag } = await store.create("k", bytes("v1"));
    const ownStartTime = await processStartTime(process.pid);
    expect(ownStartTime).toMatch(/^[0-9]+$/);
    const otherStartTime = String(BigInt(ownStartTime as string) + 1n);
    await writeLock(root, "k", { pid: process.pid, processStartTime: otherStartTime, acquiredAtMs: Date.now() });
    await store.casPut("k", bytes("v2"), etag);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v2"));
    await expect(stat(lockPathOf(root, "k"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it.runIf(hasProcStartTimes)("breaks the lock of a holder that exited but was not reaped yet (a zombie)", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root, { clock: new ManualClock(Date.now()) });
    const { etag } = await store.create("k", bytes("v1"));
    // The shell's background child exits; `exec` replaces the shell with a process that
    // never reaps it, so it stays a zombie (kill(pid, 0) still succeeds) until the end.
    const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 600"], { stdio: ["ignore", "pipe", "ignore"] });
    children.push(parent);
    const [line] = (await once(parent.stdout, "data")) as [Buffer];
    const zombiePid = Number(line.toString().trim());
    const startTime = await processStartTime(zombiePid);
    expect(startTime).not.toBeNull();
    for (let attempt = 0; !(await isZombie(zombiePid)); attempt++) {
      if (attempt > 10_000) throw new Error(`process ${zombiePid} never became a zombie`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await writeLock(root, "k", { pid: zombiePid, processStartTime: startTime, acquiredAtMs: Date.now() });
    await store.casPut("k", bytes("v2"), etag);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v2"));
  });

  it("breaks an unreadable lock only once its file is older than the stale bound", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root);
    const { etag } = await store.create("k", bytes("v1"));
    const lockPath = lockPathOf(root, "k");
    await writeFile(lockPath, "");
    const { mtimeMs } = await stat(lockPath);

    const clock = new ManualClock(Math.ceil(mtimeMs));
    const waiter = track(new FsObjectStore(root, { clock }).casPut("k", bytes("v2"), etag));
    await untilSleepingOrSettled(clock, waiter);
    expect(waiter.settled).toBe(false);
    clock.advance(FS_LOCK_STALE_MS + 1_000);
    await eventually(() => waiter.settled);
    expect(waiter.error).toBeUndefined();
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v2"));

    // A torn lock from long ago (the machine lost power) is broken on first sight.
    const { etag: nextEtag } = expectBody(await store.get("k"));
    await writeFile(lockPath, "{");
    const longAgo = new Date(Date.now() - ONE_HOUR_MS);
    await utimes(lockPath, longAgo, longAgo);
    await new FsObjectStore(root, { clock: new ManualClock(Date.now()) }).casPut("k", bytes("v3"), nextEtag);
    expect(expectBody(await store.get("k")).body).toEqual(bytes("v3"));
  });
});

interface Tracked<T> {
  settled: boolean;
  value: T | undefined;
  error: unknown;
}

function track<T>(promise: Promise<T>): Tracked<T> {
  const tracked: Tracked<T> = { settled: false, value: undefined, error: undefined };
  promise.then(
    (value) => Object.assign(tracked, { settled: true, value }),
    (error: unknown) => Object.assign(tracked, { settled: true, error }),
  );
  return tracked;
}

/** Lets the waiter run (real file I/O) until it sleeps on `clock` or its call settles. */
function untilSleepingOrSettled(clock: ManualClock, call: Tracked<unknown>): Promise<void> {
  return eventually(() => clock.pendingSleepers > 0 || call.settled);
}

interface Holder {
  readonly pid: number;
  /** Resolves once the child holds the key's lock. */
  readonly locked: Promise<void>;
  readonly exited: Promise<number | null>;
  release(): void;
  output(): string;
}

/** Spawns fsLockWorker.ts: a real process that takes the lock of `key` in a casPut. */
function startHolder(root: string, key: string, mode: "hold" | "exit"): Holder {
  const child = spawn(process.execPath, ["--import", "tsx", workerScript, root, key, mode], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  const locked = new Gate();
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes("locked ")) locked.open();
  });
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`lock worker exited with ${code}: ${stderr}`));
      else resolve(code);
    });
  });
  return {
    pid: child.pid as number,
    locked: Promise.race([locked.promise, exited.then(() => undefined)]),
    exited,
    release: () => child.stdin?.end(),
    output: () => stdout,
  };
}

async function isZombie(pid: number): Promise<boolean> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8");
  return text.slice(text.lastIndexOf(")") + 1).trim().startsWith("Z");
}

/** The pid of a process that has exited (and was reaped). */
function exitedPid(): number {
  const output = execFileSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(output.toString());
}
