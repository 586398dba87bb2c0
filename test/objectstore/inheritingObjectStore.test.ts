/**
 * Scenario: a branch's store is a view over its own objects plus, read-only, the keys of a
 * parent store that fall inside the inherited key ranges (InheritingObjectStore). Over real
 * in-memory stores: gets are answered by the right side (an own key inside a range is
 * hidden by the parent's); `list` merges both sides in UTF-8 byte order under any prefix
 * (narrower than a range, or spanning several) and after any startAfter (on either side of
 * an own/inherited boundary, or inside a range), with multi-byte keys in and around ranges;
 * writes of inherited keys are refused (CAS_CONFLICT when the parent has the key,
 * INVALID_ARGUMENT otherwise and for every casPut) without touching either store; deletes
 * of inherited keys do nothing; ownStore lists only own keys; close closes both. Over real
 * directories: openObjectStore follows the `parent` link object (a chain grandparent →
 * parent → child, each inheriting a different range; 16 links at most), and refuses
 * looping, too deep and unreadable links with STORE_LINK_INVALID. Over the S3 test
 * endpoint as the parent: ranges whose ends are multi-byte keys list as they do in memory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import {
  encodeParentLink,
  InheritingObjectStore,
  PARENT_LINK_DEPTH_MAX,
  PARENT_LINK_FORMAT,
  PARENT_LINK_KEY,
  prefixRange,
  type KeyRange,
} from "../../src/objectstore/InheritingObjectStore.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import type { ListEntry, ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { inheritParent, openObjectStore } from "../../src/objectstore/openObjectStore.js";
import { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import { startS3Endpoint, type S3Endpoint } from "../support/s3-endpoint/index.js";
import { bytes, collect, expectBody } from "./conformance.js";

const directories: string[] = [];
afterAll(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function newDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "cairn-inheriting-"));
  directories.push(directory);
  return directory;
}

/** UTF-8 byte order, written out here rather than borrowed from the code under test. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function inRanges(ranges: readonly KeyRange[], key: string): boolean {
  return ranges.some((range) => ("prefix" in range ? key.startsWith(range.prefix) : byteOrder(range.from, key) <= 0 && byteOrder(key, range.through) <= 0));
}

function text(body: Uint8Array): string {
  return Buffer.from(body).toString("utf8");
}

/** Creates each key with the body `<side>:<key>`, so every read shows which store answered. */
async function seed(store: ObjectStore, side: string, keys: readonly string[]): Promise<void> {
  for (const key of keys) await store.create(key, bytes(`${side}:${key}`));
}

async function keysOf(entries: AsyncIterable<ListEntry>): Promise<string[]> {
  return (await collect(entries)).map((entry) => entry.key);
}

/** Every object of a store with its body, to prove a refused write changed nothing. */
async function contents(store: ObjectStore): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const entry of await collect(store.list(""))) {
    const found = expectBody(await store.get(entry.key));
    result[entry.key] = `${found.etag} ${text(found.body)}`;
  }
  return result;
}

async function bodyOf(store: ObjectStore, key: string): Promise<string | null> {
  const found = await store.get(key);
  return found === null ? null : text(expectBody(found).body);
}

// The fixture. "\uff5e" (FULLWIDTH TILDE, UTF-8 EF BD 9E) sorts before the emoji (F0 ..) in
// UTF-8 byte order but after them in JavaScript's UTF-16 order (FF5E > D83D).
const RANGES: readonly KeyRange[] = [
  { from: "seg/0002", through: "seg/0004" },
  prefixRange("snap/"),
  { from: "k/é", through: "k/ü" },
  { from: "k/😀", through: "k/😂" },
];

const PARENT_KEYS = [
  "a/1",
  "k/e",
  "k/é",
  "k/ö",
  "k/ü",
  "k/üb",
  "k/\uff5e",
  "k/😀",
  "k/😁",
  "k/😂",
  "k/😃",
  "seg/0001",
  "seg/0002",
  "seg/0003",
  "seg/0004",
  "seg/0005",
  "snap/x",
  "snap/y/1",
  "z",
] as const;

/** Own keys; "k/ö", "seg/0003", "seg/00035" and "snap/z" lie inside ranges and are hidden. */
const OWN_KEYS = [
  "a/2",
  "k/z",
  "k/ö",
  "k/üb",
  "k/\uff5e",
  "k/😃",
  "seg/0001",
  "seg/0003",
  "seg/00035",
  "seg/0006",
  "snap",
  "snap/z",
  "z0",
] as const;

const HIDDEN_OWN_KEYS = ["k/ö", "seg/0003", "seg/00035", "snap/z"];

interface Fixture {
  readonly own: MemoryObjectStore;
  readonly parent: MemoryObjectStore;
  readonly view: InheritingObjectStore;
  /** `o:key` / `p:key` → the entry that side's store lists for key. */
  expected(...spec: string[]): ListEntry[];
  /** What `list` must yield, computed from the two stores and the ranges directly. */
  model(prefix: string, startAfter?: string): ListEntry[];
}

async function fixture(ranges: readonly KeyRange[] = RANGES): Promise<Fixture> {
  const own = new MemoryObjectStore();
  const parent = new MemoryObjectStore();
  await seed(own, "own", OWN_KEYS);
  await seed(parent, "parent", PARENT_KEYS);
  const ownEntries = new Map((await collect(own.list(""))).map((entry) => [entry.key, entry]));
  const parentEntries = new Map((await collect(parent.list(""))).map((entry) => [entry.key, entry]));
  const view = new InheritingObjectStore(own, parent, ranges);
  return {
    own,
    parent,
    view,
    expected: (...spec) =>
      spec.map((item) => {
        const side = item.slice(0, 2);
        const key = item.slice(2);
        const entry = (side === "o:" ? ownEntries : parentEntries).get(key);
        if (entry === undefined || (side !== "o:" && side !== "p:")) throw new Error(`bad fixture spec ${item}`);
        return entry;
      }),
    model: (prefix, startAfter) =>
      [
        ...[...ownEntries.values()].filter((entry) => !inRanges(ranges, entry.key)),
        ...[...parentEntries.values()].filter((entry) => inRanges(ranges, entry.key)),
      ]
        .filter((entry) => entry.key.startsWith(prefix))
        .filter((entry) => startAfter === undefined || byteOrder(entry.key, startAfter) > 0)
        .sort((a, b) => byteOrder(a.key, b.key)),
  };
}

describe("InheritingObjectStore reads", () => {
  it("answers own keys from the store itself and inherited keys from the parent", async () => {
    const { view } = await fixture();
    expect(await bodyOf(view, "a/2")).toBe("own:a/2");
    expect(await bodyOf(view, "seg/0001")).toBe("own:seg/0001");
    expect(await bodyOf(view, "seg/0006")).toBe("own:seg/0006");
    expect(await bodyOf(view, "snap")).toBe("own:snap");
    // Both ends of a range are inside it.
    expect(await bodyOf(view, "seg/0002")).toBe("parent:seg/0002");
    expect(await bodyOf(view, "seg/0004")).toBe("parent:seg/0004");
    expect(await bodyOf(view, "snap/y/1")).toBe("parent:snap/y/1");
    // The parent's keys outside every range are not part of the view.
    expect(await view.get("a/1")).toBeNull();
    expect(await view.get("seg/0005")).toBeNull();
    expect(await view.get("z")).toBeNull();
    // An own key inside a range is hidden by the parent's (or by its absence there).
    expect(await bodyOf(view, "seg/0003")).toBe("parent:seg/0003");
    expect(await view.get("seg/00035")).toBeNull();
    expect(await view.get("snap/z")).toBeNull();
    for (const key of HIDDEN_OWN_KEYS) expect(await bodyOf(view, key), key).not.toBe(`own:${key}`);
  });

  it("compares multi-byte keys with the ranges in UTF-8 byte order", async () => {
    const { view } = await fixture();
    expect(await bodyOf(view, "k/z")).toBe("own:k/z"); // 7A, before "é" (C3 A9)
    expect(await bodyOf(view, "k/é")).toBe("parent:k/é");
    expect(await bodyOf(view, "k/ö")).toBe("parent:k/ö"); // the own k/ö is hidden
    expect(await bodyOf(view, "k/ü")).toBe("parent:k/ü");
    expect(await bodyOf(view, "k/üb")).toBe("own:k/üb"); // just after the through key
    expect(await bodyOf(view, "k/\uff5e")).toBe("own:k/\uff5e");
    expect(await bodyOf(view, "k/😀")).toBe("parent:k/😀");
    expect(await bodyOf(view, "k/😁")).toBe("parent:k/😁");
    expect(await bodyOf(view, "k/😂")).toBe("parent:k/😂");
    expect(await bodyOf(view, "k/😃")).toBe("own:k/😃");
    expect(await view.get("k/e")).toBeNull();

    expect(view.inherits("k/é")).toBe(true);
    expect(view.inherits("k/üa")).toBe(false);
    expect(view.inherits("k/😁x")).toBe(true);
    expect(view.inherits("k/😂x")).toBe(false);
    // U+FF5E sorts after the emoji in UTF-16 but before them in UTF-8: it is not inside "k/😀".."k/😂".
    expect(view.inherits("k/\uff5e")).toBe(false);
    expect(view.inherits("snap/")).toBe(true);
    expect(view.inherits("snap")).toBe(false);
  });

  it("passes ifNoneMatch to the side that owns the key", async () => {
    const { own, parent, view } = await fixture();
    const parentEtag = expectBody(await parent.get("seg/0002")).etag;
    const ownEtag = expectBody(await own.get("a/2")).etag;
    expect(await view.get("seg/0002", { ifNoneMatch: parentEtag })).toBe("not-modified");
    expect(await view.get("a/2", { ifNoneMatch: ownEtag })).toBe("not-modified");
    expect(expectBody(await view.get("a/2", { ifNoneMatch: parentEtag })).etag).toBe(ownEtag);
  });

  it("refuses invalid keys like any store", async () => {
    const { view } = await fixture();
    await expect(view.get("")).rejects.toMatchObject({ code: "STORE_KEY_INVALID" });
    await expect(view.create("bad\u0001key", bytes("x"))).rejects.toMatchObject({ code: "STORE_KEY_INVALID" });
  });
});

describe("InheritingObjectStore list", () => {
  it("merges own and inherited keys in UTF-8 order, hiding own keys inside ranges", async () => {
    const { view, expected } = await fixture();
    const all = [
      "o:a/2",
      "o:k/z",
      "p:k/é",
      "p:k/ö",
      "p:k/ü",
      "o:k/üb",
      "o:k/\uff5e",
      "p:k/😀",
      "p:k/😁",
      "p:k/😂",
      "o:k/😃",
      "o:seg/0001",
      "p:seg/0002",
      "p:seg/0003",
      "p:seg/0004",
      "o:seg/0006",
      "o:snap",
      "p:snap/x",
      "p:snap/y/1",
      "o:z0",
    ];
    expect(await collect(view.list(""))).toEqual(expected(...all));
    expect(await collect(view.list("seg/"))).toEqual(
      expected("o:seg/0001", "p:seg/0002", "p:seg/0003", "p:seg/0004", "o:seg/0006"),
    );
  });

  it("resumes after startAfter across every own/inherited boundary", async () => {
    const { view } = await fixture();
    const seg = (startAfter: string) => keysOf(view.list("seg/", { startAfter }));
    // Own key just before a range, then into it.
    expect(await seg("seg/0001")).toEqual(["seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    // Not a key at all, between the own key and the range.
    expect(await seg("seg/0001z")).toEqual(["seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    // Inside the range: on a key, between keys, on a hidden own key, on its through.
    expect(await seg("seg/0002")).toEqual(["seg/0003", "seg/0004", "seg/0006"]);
    expect(await seg("seg/00025")).toEqual(["seg/0003", "seg/0004", "seg/0006"]);
    expect(await seg("seg/00035")).toEqual(["seg/0004", "seg/0006"]);
    expect(await seg("seg/0004")).toEqual(["seg/0006"]);
    // Past the range: the parent's seg/0005 is not inherited.
    expect(await seg("seg/0005")).toEqual(["seg/0006"]);
    expect(await seg("seg/0006")).toEqual([]);
    // Before everything, and before the prefix.
    expect(await seg("seg/")).toEqual(["seg/0001", "seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    expect(await seg("a")).toEqual(["seg/0001", "seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    // From own "snap" into the prefix range "snap/".
    expect(await keysOf(view.list("snap", { startAfter: "snap" }))).toEqual(["snap/x", "snap/y/1"]);
    expect(await keysOf(view.list("", { startAfter: "snap/x" }))).toEqual(["snap/y/1", "z0"]);
  });

  it("lists under a prefix narrower than a range, and under one spanning several ranges", async () => {
    const { view, expected } = await fixture();
    expect(await collect(view.list("seg/0003"))).toEqual(expected("p:seg/0003"));
    expect(await collect(view.list("seg/0002"))).toEqual(expected("p:seg/0002"));
    expect(await keysOf(view.list("seg/000"))).toEqual(["seg/0001", "seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    expect(await keysOf(view.list("seg/0005"))).toEqual([]);
    expect(await collect(view.list("snap/y"))).toEqual(expected("p:snap/y/1"));
    expect(await keysOf(view.list("snap/y/", { startAfter: "snap/y/1" }))).toEqual([]);
    expect(await keysOf(view.list("snap/z"))).toEqual([]);
    // "s" spans the seg and snap ranges; "k/" spans both multi-byte ranges.
    expect(await keysOf(view.list("s"))).toEqual([
      "seg/0001",
      "seg/0002",
      "seg/0003",
      "seg/0004",
      "seg/0006",
      "snap",
      "snap/x",
      "snap/y/1",
    ]);
    expect(await keysOf(view.list("s", { startAfter: "seg/0003" }))).toEqual(["seg/0004", "seg/0006", "snap", "snap/x", "snap/y/1"]);
    expect(await collect(view.list("k/"))).toEqual(
      expected("o:k/z", "p:k/é", "p:k/ö", "p:k/ü", "o:k/üb", "o:k/\uff5e", "p:k/😀", "p:k/😁", "p:k/😂", "o:k/😃"),
    );
  });

  it("merges multi-byte keys in and around ranges in UTF-8 order, with startAfter", async () => {
    const { view } = await fixture();
    const k = (startAfter?: string) => keysOf(view.list("k/", startAfter === undefined ? {} : { startAfter }));
    expect(await k("k/z")).toEqual(["k/é", "k/ö", "k/ü", "k/üb", "k/\uff5e", "k/😀", "k/😁", "k/😂", "k/😃"]);
    expect(await k("k/é")).toEqual(["k/ö", "k/ü", "k/üb", "k/\uff5e", "k/😀", "k/😁", "k/😂", "k/😃"]);
    expect(await k("k/ü")).toEqual(["k/üb", "k/\uff5e", "k/😀", "k/😁", "k/😂", "k/😃"]);
    // The own U+FF5E key comes before the inherited emoji in byte order.
    expect(await k("k/\uff5e")).toEqual(["k/😀", "k/😁", "k/😂", "k/😃"]);
    expect(await k("k/😀")).toEqual(["k/😁", "k/😂", "k/😃"]);
    expect(await k("k/😁x")).toEqual(["k/😂", "k/😃"]);
    expect(await k("k/😂")).toEqual(["k/😃"]);
    expect(await keysOf(view.list("k/ü"))).toEqual(["k/ü", "k/üb"]);
    expect(await keysOf(view.list("k/😁"))).toEqual(["k/😁"]);
    expect(await keysOf(view.list("k/😃"))).toEqual(["k/😃"]);
  });

  it("matches a direct computation for every prefix and startAfter drawn from the keys", async () => {
    const { view, model } = await fixture();
    const keys = [...new Set<string>([...OWN_KEYS, ...PARENT_KEYS])];
    const prefixes = new Set<string>([""]);
    for (const key of keys) {
      const characters = Array.from(key); // whole code points: never half a surrogate pair
      for (let length = 1; length <= characters.length; length++) prefixes.add(characters.slice(0, length).join(""));
    }
    const starts: (string | undefined)[] = [undefined, ...keys, ...keys.map((key) => `${key}0`), ...prefixes].filter(
      (start) => start !== "",
    );
    for (const prefix of prefixes) {
      for (const startAfter of starts) {
        const listed = await collect(view.list(prefix, startAfter === undefined ? {} : { startAfter }));
        expect(listed, `list(${JSON.stringify(prefix)}, startAfter ${JSON.stringify(startAfter)})`).toEqual(
          model(prefix, startAfter),
        );
      }
    }
  });

  it("lists each inherited key once when ranges overlap", async () => {
    const { view, expected } = await fixture([prefixRange("seg/"), { from: "seg/0002", through: "seg/0003" }]);
    expect(await collect(view.list("seg/"))).toEqual(
      expected("p:seg/0001", "p:seg/0002", "p:seg/0003", "p:seg/0004", "p:seg/0005"),
    );
  });

  it("inherits every key that starts with a prefixRange's prefix", async () => {
    const own = new MemoryObjectStore();
    const parent = new MemoryObjectStore();
    // U+10FFFF is a valid key character (and a valid XML 1.0 character).
    const keys = ["snap/a", "snap/\u{10ffff}", "snap/\u{10ffff}more"];
    await seed(parent, "parent", keys);
    const view = new InheritingObjectStore(own, parent, [prefixRange("snap/")]);
    for (const key of keys) expect(view.inherits(key), key).toBe(true);
    expect(await keysOf(view.list("snap/"))).toEqual(keys);
  });

  it("lists a range's keys under a prefix whose keys run past prefix + U+10FFFF", async () => {
    const own = new MemoryObjectStore();
    const parent = new MemoryObjectStore();
    const key = "p/\u{10ffff}b";
    await seed(parent, "parent", [key]);
    const view = new InheritingObjectStore(own, parent, [{ from: "p/\u{10ffff}a", through: "q" }]);
    expect(view.inherits(key)).toBe(true);
    expect(await bodyOf(view, key)).toBe(`parent:${key}`);
    expect(await keysOf(view.list(""))).toEqual([key]);
    expect(await keysOf(view.list("p/"))).toEqual([key]);
  });

  it("lists only own keys through ownStore, hidden ones included", async () => {
    const { view } = await fixture();
    expect(await keysOf(view.ownStore.list(""))).toEqual([...OWN_KEYS].sort(byteOrder));
    expect(await keysOf(view.ownStore.list("seg/", { startAfter: "seg/0001" }))).toEqual(["seg/0003", "seg/00035", "seg/0006"]);
    expect(await keysOf(view.ownStore.list("k/"))).toEqual(["k/z", "k/ö", "k/üb", "k/\uff5e", "k/😃"]);
    expect(await keysOf(view.ownStore.list("snap/"))).toEqual(["snap/z"]);
  });
});

describe("InheritingObjectStore writes", () => {
  it("refuses to create an inherited key: CAS_CONFLICT when the parent has it, INVALID_ARGUMENT otherwise", async () => {
    const { own, parent, view } = await fixture();
    const before = { own: await contents(own), parent: await contents(parent) };
    for (const key of ["seg/0002", "seg/0003", "seg/0004", "snap/x", "k/é", "k/ö", "k/😁"]) {
      await expect(view.create(key, bytes("new")), key).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    }
    // seg/00035 and snap/z exist only as hidden own keys: the parent lacks them.
    for (const key of ["seg/00025", "seg/00035", "snap/", "snap/new", "snap/z", "k/ó", "k/😁x"]) {
      await expect(view.create(key, bytes("new")), key).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    expect(await contents(own)).toEqual(before.own);
    expect(await contents(parent)).toEqual(before.parent);
  });

  it("refuses every casPut of an inherited key with INVALID_ARGUMENT, even with the current etag", async () => {
    const { own, parent, view } = await fixture();
    const before = { own: await contents(own), parent: await contents(parent) };
    const parentEtag = expectBody(await parent.get("seg/0002")).etag;
    const hiddenOwnEtag = expectBody(await own.get("seg/0003")).etag;
    await expect(view.casPut("seg/0002", bytes("new"), parentEtag)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(view.casPut("seg/0003", bytes("new"), hiddenOwnEtag)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(view.casPut("snap/none", bytes("new"), "etag")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(view.casPut("k/😂", bytes("new"), expectBody(await parent.get("k/😂")).etag)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    expect(await contents(own)).toEqual(before.own);
    expect(await contents(parent)).toEqual(before.parent);
  });

  it("writes keys outside the ranges to the store itself only", async () => {
    const { own, parent, view } = await fixture();
    const parentBefore = await contents(parent);
    // Just outside ranges: before a from, after a through, a parent-only key not inherited.
    for (const key of ["seg/0001z", "seg/00045", "k/üa", "k/😂x", "k/e", "a/1", "snap0"]) {
      await view.create(key, bytes(`view:${key}`));
      expect(await bodyOf(own, key), key).toBe(`view:${key}`);
      expect(await bodyOf(view, key), key).toBe(`view:${key}`);
    }
    await expect(view.create("a/2", bytes("again"))).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    const { etag } = expectBody(await own.get("seg/0001"));
    await view.casPut("seg/0001", bytes("updated"), etag);
    expect(await bodyOf(own, "seg/0001")).toBe("updated");
    await expect(view.casPut("seg/0001", bytes("stale"), etag)).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    await expect(view.casPut("seg/0009", bytes("missing"), etag)).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    expect(await contents(parent)).toEqual(parentBefore);
  });

  it("deletes own keys and leaves inherited ones, and the parent, alone", async () => {
    const { own, parent, view } = await fixture();
    const parentBefore = await contents(parent);
    await view.delete("seg/0002");
    await view.delete("seg/0003"); // inherited: the hidden own copy stays as well
    await view.delete("k/😁");
    await view.delete("snap/never-existed");
    expect(await bodyOf(view, "seg/0002")).toBe("parent:seg/0002");
    expect(await bodyOf(view, "k/😁")).toBe("parent:k/😁");
    expect(await bodyOf(own, "seg/0003")).toBe("own:seg/0003");

    await view.delete("a/2");
    expect(await own.get("a/2")).toBeNull();

    await view.deleteMany(["seg/0001", "seg/0004", "k/\uff5e", "k/😀", "snap/x", "snap/z", "z0", "never"]);
    expect(await keysOf(own.list(""))).toEqual(["k/z", "k/ö", "k/üb", "k/😃", "seg/0003", "seg/00035", "seg/0006", "snap", "snap/z"]);
    expect(await contents(parent)).toEqual(parentBefore);
    expect(await keysOf(view.list("seg/"))).toEqual(["seg/0002", "seg/0003", "seg/0004", "seg/0006"]);
    await view.deleteMany([]);
    await view.deleteMany(["seg/0002", "snap/y/1"]);
    expect(await contents(parent)).toEqual(parentBefore);
  });

  it("closes both stores", async () => {
    class ClosableStore extends MemoryObjectStore {
      closed = false;
      override async close(): Promise<void> {
        this.closed = true;
      }
    }
    const own = new ClosableStore();
    const parent = new ClosableStore();
    const view = new InheritingObjectStore(own, parent, RANGES);
    expect(view.description).toBe(own.description);
    await view.close();
    expect([own.closed, parent.closed]).toEqual([true, true]);
  });
});

describe("inheritParent", () => {
  it("returns a store without a link as it is, and one with a link as its view", async () => {
    const plain = new MemoryObjectStore();
    await plain.create("k", bytes("v"));
    expect(await inheritParent(plain)).toBe(plain);

    const parentName = `inheriting-parent-${process.pid}`;
    const named = new MemoryObjectStore(parentName);
    await seed(named, "parent", ["seg/1", "other"]);
    const own = new MemoryObjectStore();
    await own.create(PARENT_LINK_KEY, encodeParentLink({ format: PARENT_LINK_FORMAT, parentUrl: `mem://${parentName}`, ranges: [prefixRange("seg/")] }));
    const view = await inheritParent(own);
    expect(view).toBeInstanceOf(InheritingObjectStore);
    expect(await bodyOf(view, "seg/1")).toBe("parent:seg/1");
    expect(await view.get("other")).toBeNull();
    expect(await keysOf(view.list(""))).toEqual([PARENT_LINK_KEY, "seg/1"]);
    await named.deleteMany(["seg/1", "other"]);
  });

  it("refuses a link that is not JSON, not a link, or has a backwards range", async () => {
    const links = [
      bytes("not json {"),
      bytes(JSON.stringify({ format: 2, parentUrl: "mem://x", ranges: [] })),
      bytes(JSON.stringify({ format: PARENT_LINK_FORMAT, ranges: [] })),
      bytes(JSON.stringify({ format: PARENT_LINK_FORMAT, parentUrl: "mem://x", ranges: [{ from: "b", through: "a" }] })),
      bytes(JSON.stringify({ format: PARENT_LINK_FORMAT, parentUrl: "mem://x", ranges: [{ from: "", through: "a" }] })),
    ];
    for (const link of links) {
      const store = new MemoryObjectStore();
      await store.create(PARENT_LINK_KEY, link);
      await expect(inheritParent(store), text(link)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });
    }
  });
});

describe("openObjectStore with parent links", () => {
  async function writeLink(directory: string, parentUrl: string, ranges: readonly KeyRange[]): Promise<void> {
    await new FsObjectStore(directory).create(
      PARENT_LINK_KEY,
      encodeParentLink({ format: PARENT_LINK_FORMAT, parentUrl, ranges: [...ranges] }),
    );
  }

  it("opens a directory without a link as a plain store", async () => {
    const directory = newDirectory();
    await seed(new FsObjectStore(directory), "plain", ["a"]);
    const store = await openObjectStore(directory);
    expect(store).not.toBeInstanceOf(InheritingObjectStore);
    expect(await bodyOf(store, "a")).toBe("plain:a");
    await store.close();
  });

  it("follows a chain grandparent → parent → child, each link inheriting a different range", async () => {
    const grandparent = newDirectory();
    const parent = newDirectory();
    const child = newDirectory();
    await seed(new FsObjectStore(grandparent), "grandparent", ["seg/a/1", "seg/a/2", "seg/b/1", "snap/1"]);
    await writeLink(parent, grandparent, [prefixRange("seg/a/")]);
    await seed(new FsObjectStore(parent), "parent", ["seg/a/9", "seg/b/2", "snap/2"]);
    await writeLink(child, parent, [prefixRange("seg/")]);
    await seed(new FsObjectStore(child), "child", ["snap/c", "seg0"]);
    const snapshot = async () => ({
      grandparent: await contents(new FsObjectStore(grandparent)),
      parent: await contents(new FsObjectStore(parent)),
      child: await contents(new FsObjectStore(child)),
    });
    const before = await snapshot();

    const view = await openObjectStore(child);
    expect(view).toBeInstanceOf(InheritingObjectStore);
    // seg/a/ comes from the grandparent through the parent; seg/b/2 is the parent's own;
    // the grandparent's seg/b/1 and the parent's hidden seg/a/9 are in no view.
    expect(await bodyOf(view, "seg/a/1")).toBe("grandparent:seg/a/1");
    expect(await bodyOf(view, "seg/b/2")).toBe("parent:seg/b/2");
    expect(await view.get("seg/b/1")).toBeNull();
    expect(await view.get("seg/a/9")).toBeNull();
    expect(await view.get("snap/1")).toBeNull();
    expect(await view.get("snap/2")).toBeNull();
    expect(await bodyOf(view, "snap/c")).toBe("child:snap/c");
    expect(await keysOf(view.list(""))).toEqual([PARENT_LINK_KEY, "seg/a/1", "seg/a/2", "seg/b/2", "seg0", "snap/c"]);
    expect(await keysOf(view.list("seg/", { startAfter: "seg/a/1" }))).toEqual(["seg/a/2", "seg/b/2"]);
    expect(await keysOf(view.list("seg/a/"))).toEqual(["seg/a/1", "seg/a/2"]);
    expect(await keysOf((view as InheritingObjectStore).ownStore.list(""))).toEqual([PARENT_LINK_KEY, "seg0", "snap/c"]);

    await expect(view.create("seg/a/1", bytes("x"))).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    await expect(view.create("seg/b/2", bytes("x"))).rejects.toMatchObject({ code: "CAS_CONFLICT" });
    await expect(view.create("seg/b/1", bytes("x"))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(view.casPut("seg/b/2", bytes("x"), "etag")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await view.delete("seg/a/1");
    await view.deleteMany(["seg/a/2", "seg/b/2"]);
    expect(await snapshot()).toEqual(before);
    await view.close();

    // The parent opened on its own is the grandparent's view over seg/a/.
    const middle = await openObjectStore(parent);
    expect(await keysOf(middle.list(""))).toEqual([PARENT_LINK_KEY, "seg/a/1", "seg/a/2", "seg/b/2", "snap/2"]);
    await middle.close();
  });

  it("follows up to PARENT_LINK_DEPTH_MAX links and refuses one more", async () => {
    const chain = Array.from({ length: PARENT_LINK_DEPTH_MAX + 2 }, () => newDirectory());
    const root = chain.at(-1)!;
    await seed(new FsObjectStore(root), "root", ["seg/1"]);
    // chain[i] links to chain[i + 1]: chain[1] is PARENT_LINK_DEPTH_MAX links from the root.
    for (let index = 0; index < chain.length - 1; index++) await writeLink(chain[index]!, chain[index + 1]!, [prefixRange("seg/")]);

    const deepest = await openObjectStore(chain[1]!);
    expect(await bodyOf(deepest, "seg/1")).toBe("root:seg/1");
    await deepest.close();
    await expect(openObjectStore(chain[0]!)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });
  });

  it("refuses a directory that links to itself, and a loop of two", async () => {
    const self = newDirectory();
    await writeLink(self, self, [prefixRange("seg/")]);
    await expect(openObjectStore(self)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });

    const first = newDirectory();
    const second = newDirectory();
    await writeLink(first, second, [prefixRange("a/")]);
    await writeLink(second, first, [prefixRange("b/")]);
    await expect(openObjectStore(first)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });
    expect(Object.keys(await contents(new FsObjectStore(first)))).toEqual([PARENT_LINK_KEY]);
  });

  it("refuses an unparsable link, in the store or in a parent", async () => {
    const broken = newDirectory();
    await new FsObjectStore(broken).create(PARENT_LINK_KEY, bytes('{"format":1,"parentUrl":'));
    await expect(openObjectStore(broken)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });

    const child = newDirectory();
    await writeLink(child, broken, [prefixRange("seg/")]);
    await expect(openObjectStore(child)).rejects.toMatchObject({ code: "STORE_LINK_INVALID" });
  });
});

describe("InheritingObjectStore over an S3 parent", () => {
  let endpoint: S3Endpoint;
  let parent: S3ObjectStore;
  beforeAll(async () => {
    endpoint = await startS3Endpoint({ mode: "aws", seed: 3 });
    parent = new S3ObjectStore({
      bucket: endpoint.bucket,
      prefix: "inheriting/",
      region: endpoint.region,
      endpoint: endpoint.url,
      credentials: endpoint.credentials,
    });
    await seed(parent, "parent", ["k/e", "k/é", "k/ö", "k/üb", "k/😀", "k/😁", "k/😂", "k/😃"]);
  });
  afterAll(async () => {
    await parent.close();
    await endpoint.close();
  });

  it("lists a range whose from ends in a two-byte character", async () => {
    const view = new InheritingObjectStore(new MemoryObjectStore(), parent, [{ from: "k/é", through: "k/ü" }]);
    expect(await keysOf(view.list("k/"))).toEqual(["k/é", "k/ö"]);
  });

  it("lists a range whose from ends in a character outside the BMP (a surrogate pair in JavaScript)", async () => {
    const view = new InheritingObjectStore(new MemoryObjectStore(), parent, [{ from: "k/😀", through: "k/😂" }]);
    expect(await bodyOf(view, "k/😁")).toBe("parent:k/😁");
    expect(await keysOf(view.list("k/"))).toEqual(["k/😀", "k/😁", "k/😂"]);
  });
});
