/**
 * Scenario: a PrefixedObjectStore (a layout generation's view of the bucket) passes the
 * same contract suite as the stores it wraps, sees only its own keys, and leaves the
 * inner store open when closed.
 */
import { describe, expect, it } from "vitest";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { PrefixedObjectStore } from "../../src/objectstore/PrefixedObjectStore.js";
import { bytes, collect, defineObjectStoreConformance, expectBody } from "./conformance.js";

defineObjectStoreConformance("prefixed memory", async () => {
  const inner = new MemoryObjectStore();
  // A neighbour outside the prefix that must never show through.
  await inner.create("g1", bytes("outside"));
  await inner.create("g0/x", bytes("outside"));
  const store = new PrefixedObjectStore(inner, "g1/");
  return { store, cleanup: () => inner.close() };
});

describe("PrefixedObjectStore", () => {
  it("maps keys under its prefix and strips them in listings", async () => {
    const inner = new MemoryObjectStore();
    const view = new PrefixedObjectStore(inner, "g2/");
    await view.create("s0/manifest", bytes("m"));
    await inner.create("s0/manifest", bytes("gen0"));
    expect(expectBody(await inner.get("g2/s0/manifest")).body).toEqual(bytes("m"));
    expect((await collect(view.list(""))).map((entry) => entry.key)).toEqual(["s0/manifest"]);
    expect((await collect(view.list("s0/", { startAfter: "s0/a" }))).map((entry) => entry.key)).toEqual(["s0/manifest"]);
    expect((await collect(view.list("s0/", { startAfter: "s0/manifest" }))).map((entry) => entry.key)).toEqual([]);
    await view.close();
    expect(expectBody(await inner.get("s0/manifest")).body).toEqual(bytes("gen0"));
    await expect(view.get("")).rejects.toMatchObject({ code: "STORE_KEY_INVALID" });
    expect(() => new PrefixedObjectStore(inner, "g2")).toThrow(/end with/);
  });
});
