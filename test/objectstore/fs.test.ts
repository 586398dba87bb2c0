/**
 * Scenario: a directory used as a bucket. It passes the contract suite; every key, even
 * `../../etc/passwd`, stays inside its root and round-trips; `a` and `a/b` coexist;
 * deletes prune empty directories; damaged and foreign files are reported or ignored.
 * Key locks are tested in fsKeyLocks.test.ts, fsync failures in fsSyncFailure.test.ts.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { FS_NAME_CHUNK_CHARS_MAX, STORE_KEY_BYTES_MAX } from "../../src/base/limits.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { keyForPathComponents, pathComponentsForKey } from "../../src/objectstore/fsKeyPaths.js";
import { assertValidKey } from "../../src/objectstore/keys.js";
import { AWKWARD_KEYS, bytes, collect, defineObjectStoreConformance, expectBody } from "./conformance.js";

const directories: string[] = [];

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-fs-store-"));
  directories.push(directory);
  return directory;
}

afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

defineObjectStoreConformance("directory", async () => {
  const root = await mkdtemp(join(tmpdir(), "cairn-fs-conformance-"));
  const store = new FsObjectStore(root);
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});

describe("FsObjectStore key paths", () => {
  it("keeps every key, however dotted or slashed, inside the root", async () => {
    const outer = await temporaryDirectory();
    const root = join(outer, "bucket");
    const store = new FsObjectStore(root);
    const escaping = ["../../etc/passwd", "../outside", "./here", "/absolute", "..", ".", "a/../../b", "%2E%2E/x"];
    for (const key of escaping) await store.create(key, bytes(key));
    expect(await readdir(outer)).toEqual(["bucket"]);
    for (const file of await filesUnder(root)) expect(relative(root, file).startsWith("..")).toBe(false);
    for (const key of escaping) expect(expectBody(await store.get(key)).body).toEqual(bytes(key));
  });

  it("stores a key and keys below it side by side, and prunes emptied directories", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root);
    await store.create("a", bytes("file a"));
    await store.create("a/b", bytes("file a/b"));
    await store.create("a/b/c", bytes("file a/b/c"));
    expect((await collect(store.list(""))).map((entry) => entry.key)).toEqual(["a", "a/b", "a/b/c"]);
    await store.delete("a/b/c");
    await store.delete("a/b");
    expect((await readdir(root)).sort()).toEqual([".locks", ".tmp", "a@"]);
    expect(expectBody(await store.get("a")).body).toEqual(bytes("file a"));
  });

  it("round-trips the longest keys by splitting long names", async () => {
    const store = new FsObjectStore(await temporaryDirectory());
    const longest = ["x".repeat(STORE_KEY_BYTES_MAX), "é".repeat(STORE_KEY_BYTES_MAX / 2), `p/${"日".repeat(340)}`];
    for (const key of longest) await store.create(key, bytes(key.slice(0, 10)));
    expect((await collect(store.list(""))).map((entry) => entry.key)).toEqual([...longest].sort());
    for (const key of longest) {
      for (const name of pathComponentsForKey(key)) expect(name.length).toBeLessThanOrEqual(FS_NAME_CHUNK_CHARS_MAX + 1);
    }
  });

  it("maps keys to safe names one-to-one (property)", () => {
    const validKey = fc
      .array(fc.oneof(fc.constantFrom("", ".", "..", "%", "+", "@", "A", "a"), fc.string({ unit: "grapheme", maxLength: 12 })), {
        minLength: 1,
        maxLength: 6,
      })
      .map((segments) => segments.join("/"))
      .filter((key) => {
        try {
          assertValidKey(key);
          return true;
        } catch {
          return false;
        }
      });
    fc.assert(
      fc.property(validKey, validKey, (key, other) => {
        const components = pathComponentsForKey(key);
        for (const name of components) {
          expect(name).toMatch(/^(?:[a-z0-9_.-]|%[0-9A-F]{2}|%)+[@+]?$/);
          expect(name.startsWith(".")).toBe(false);
        }
        expect(keyForPathComponents(components)).toBe(key);
        if (key !== other) expect(pathComponentsForKey(other)).not.toEqual(components);
      }),
      { numRuns: 500 },
    );
    for (const key of AWKWARD_KEYS) expect(keyForPathComponents(pathComponentsForKey(key))).toBe(key);
  });
});

describe("FsObjectStore files", () => {
  it("reports an object file that does not match its etag", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root);
    await store.create("damaged", bytes("original"));
    const path = join(root, "damaged@");
    const text = await readFile(path, "latin1");
    await writeFile(path, text.replace("original", "tampered"), "latin1");
    await expect(store.get("damaged")).rejects.toMatchObject({ code: "STORE_OBJECT_INVALID" });
    await writeFile(path, "no header at all");
    await expect(store.get("damaged")).rejects.toMatchObject({ code: "STORE_OBJECT_INVALID" });
  });

  it("ignores files it did not write", async () => {
    const root = await temporaryDirectory();
    const store = new FsObjectStore(root);
    await store.create("dir/real", bytes("real"));
    await writeFile(join(root, "dir", ".DS_Store"), "x");
    await writeFile(join(root, "dir", "notes.txt"), "x");
    await writeFile(join(root, "dir", "%61@"), "x");
    await writeFile(join(root, "UPPER@"), "x");
    expect((await collect(store.list(""))).map((entry) => entry.key)).toEqual(["dir/real"]);
  });

  it("sweeps temporary files a crashed writer left behind", async () => {
    const root = await temporaryDirectory();
    const leftover = join(root, ".tmp", "object-crashed");
    const recent = join(root, ".tmp", "object-in-flight");
    await mkdir(join(root, ".tmp"), { recursive: true });
    await writeFile(leftover, "partial");
    await writeFile(recent, "partial");
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    await utimes(leftover, twoHoursAgo, twoHoursAgo);
    const store = new FsObjectStore(root);
    await store.create("k", bytes("v"));
    await store.close();
    expect(await readdir(join(root, ".tmp"))).toEqual(["object-in-flight"]);
  });
});

async function filesUnder(directory: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(path)));
    else files.push(path);
  }
  return files;
}
