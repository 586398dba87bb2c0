/**
 * Scenario: the disk fails the directory fsync that follows a create's link or a
 * casPut's rename (issue 7, item 2.9). The write is visible but not durable, so it must
 * never be acknowledged: the call is ambiguous, and a caller that resolves the ambiguity
 * by reading the key back through the same store gets STORE_FAILED instead of the file,
 * as does every later call. A fresh store on the directory (a restarted process) works.
 * The fsync is failed through the `syncDirectory` seam; a healthy disk cannot be made to
 * fail one on demand. And a fsync that finds its directory gone — removed by a racing
 * delete of its last other key — is no failure: the parent is synced instead.
 */
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { Gate } from "../support/Gate.js";
import { bytes, collect, expectBody } from "./conformance.js";

const directories: string[] = [];
afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-fs-fsync-"));
  directories.push(directory);
  return directory;
}

/** A directory fsync that works until `failing` is set, then fails as a dying disk does. */
function faultyDisk() {
  const disk = {
    failing: false,
    syncDirectory: async (directory: string) => {
      if (disk.failing) throw Object.assign(new Error(`EIO: i/o error, fsync '${directory}'`), { code: "EIO" });
    },
  };
  return disk;
}

async function expectFailedStore(store: ObjectStore, root: string, etag: string): Promise<void> {
  const failed = { code: "STORE_FAILED", kind: "Unavailable" };
  const calls: [string, () => Promise<unknown>][] = [
    ["get", () => store.get("k")],
    ["get of another key", () => store.get("other")],
    ["create", () => store.create("fresh", bytes("x"))],
    ["casPut", () => store.casPut("k", bytes("y"), etag)],
    ["delete", () => store.delete("k")],
    ["deleteMany", () => store.deleteMany(["k", "other"])],
    ["list", () => collect(store.list(""))],
  ];
  for (const [name, call] of calls) await expect(call(), name).rejects.toMatchObject(failed);
  const error = await store.get("k").catch((caught: unknown) => caught as Error);
  expect((error as Error).message).toContain(`the directory store at ${root} could not make a write durable`);
  expect((error as Error).message).toContain("EIO");
  expect((error as Error).message).toContain("restart the process");
}

describe("FsObjectStore when a directory fsync fails", () => {
  it("does not acknowledge a create whose directory fsync failed, and refuses every later call", async () => {
    const root = await temporaryDirectory();
    const disk = faultyDisk();
    const store = new FsObjectStore(root, { syncDirectory: disk.syncDirectory });
    const { etag } = await store.create("other", bytes("durable"));

    disk.failing = true;
    await expect(store.create("k", bytes("visible, not durable"))).rejects.toMatchObject({
      code: "STORE_AMBIGUOUS_OUTCOME",
    });
    disk.failing = false; // a retried fsync may "succeed": it proves nothing now
    // The caller resolves the ambiguous create by reading back: it must not find the file.
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_FAILED" });
    await expectFailedStore(store, root, etag);

    const restarted = new FsObjectStore(root);
    expect(expectBody(await restarted.get("other")).body).toEqual(bytes("durable"));
    await restarted.create("after-restart", bytes("ok"));
    expect(expectBody(await restarted.get("after-restart")).body).toEqual(bytes("ok"));
  });

  it("does not acknowledge a casPut whose directory fsync failed, and refuses every later call", async () => {
    const root = await temporaryDirectory();
    const disk = faultyDisk();
    const store = new FsObjectStore(root, { syncDirectory: disk.syncDirectory });
    const { etag } = await store.create("k", bytes("v1"));

    disk.failing = true;
    await expect(store.casPut("k", bytes("v2"), etag)).rejects.toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME" });
    disk.failing = false;
    await expect(store.get("k")).rejects.toMatchObject({ code: "STORE_FAILED" });
    await expect(store.get("k", { ifNoneMatch: etag })).rejects.toMatchObject({ code: "STORE_FAILED" });
    await expectFailedStore(store, root, etag);

    const restarted = new FsObjectStore(root);
    const current = expectBody(await restarted.get("k"));
    await restarted.casPut("k", bytes("v3"), current.etag);
    expect(expectBody(await restarted.get("k")).body).toEqual(bytes("v3"));
  });

  it("refuses a write that completed while another call failed the store", async () => {
    const root = await temporaryDirectory();
    let failing = false;
    const slowReached = new Gate();
    const slowRelease = new Gate();
    const store = new FsObjectStore(root, {
      syncDirectory: async (directory) => {
        if (directory === join(root, "slow")) {
          slowReached.open();
          await slowRelease.promise;
        } else if (failing) {
          throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
        }
      },
    });
    // `slow/k` is linked and waits in its directory fsync while the fsync of `k` fails;
    // its own fsync then "succeeds", which after a failed fsync proves nothing.
    const slow = store.create("slow/k", bytes("in flight")).then(
      () => "acknowledged",
      (error: { code?: string }) => error.code,
    );
    await slowReached.promise;
    failing = true;
    await expect(store.create("k", bytes("v"))).rejects.toMatchObject({ code: "STORE_AMBIGUOUS_OUTCOME" });
    failing = false;
    slowRelease.open();
    expect(await slow).toBe("STORE_AMBIGUOUS_OUTCOME");
  });

  it("two deletes racing in one directory: the one whose directory the other removed fsyncs its parent, and the store stays up", async () => {
    const root = await temporaryDirectory();
    const firstReached = new Gate();
    const firstRelease = new Gate();
    let armed = false;
    const synced: string[] = [];
    const store = new FsObjectStore(root, {
      // The real fsync, with the first delete's held until the second delete has pruned the directory.
      syncDirectory: async (directory) => {
        if (armed && directory === join(root, "log")) {
          armed = false;
          firstReached.open();
          await firstRelease.promise;
        }
        synced.push(directory);
        const handle = await open(directory, "r");
        try {
          await handle.sync();
        } finally {
          await handle.close();
        }
      },
    });
    await store.create("log/a", bytes("a"));
    await store.create("log/b", bytes("b"));
    armed = true;
    const first = store.delete("log/a");
    await firstReached.promise;
    // The second delete empties `log/` and removes it while the first waits for its fsync.
    await store.delete("log/b");
    firstRelease.open();
    await first;
    expect(synced.at(-1)).toBe(root);
    // Nothing failed the store: it takes writes in that directory again.
    await store.create("log/c", bytes("c"));
    expect(new TextDecoder().decode(expectBody(await store.get("log/c")).body)).toBe("c");
  });
});
