/**
 * Scenario: the in-process MemoryObjectStore passes the same contract suite as the real
 * adapters, and named instances (mem://name) are shared within the process.
 */
import { describe, expect, it } from "vitest";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { bytes, defineObjectStoreConformance, expectBody } from "./conformance.js";

defineObjectStoreConformance("memory", async () => {
  const store = new MemoryObjectStore();
  return { store, cleanup: () => store.close() };
});

describe("MemoryObjectStore names", () => {
  it("shares a named store within the process and keeps anonymous ones apart", async () => {
    const name = `shared-${process.pid}`;
    const first = new MemoryObjectStore(name);
    const { etag } = await first.create("k", bytes("v"));
    expect(expectBody(await new MemoryObjectStore(name).get("k")).etag).toBe(etag);
    expect(await new MemoryObjectStore().get("k")).toBeNull();
    await first.delete("k");
  });
});
