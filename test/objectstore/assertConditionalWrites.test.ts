/**
 * Scenario: Cairn probes a store before trusting it. Stores that honour conditional
 * writes pass and keep nothing of the probe; stores that ignore one of the conditions —
 * modelled on real ones: an If-None-Match that overwrites, an If-Match that ignores the
 * etag, a CAS that creates missing keys (MinIO before 2025-09), a store that answers
 * "not implemented" — are refused with STORE_NO_CONDITIONAL_WRITES naming the failing
 * step, and the probe cleans up after itself even then. An unreachable store is
 * reported as such, not as a store without conditional writes.
 */
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { assertConditionalWrites, PROBE_PREFIX } from "../../src/objectstore/assertConditionalWrites.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import type { ObjectStore, PutResult } from "../../src/objectstore/ObjectStore.js";
import { collect } from "./conformance.js";

/** A memory store whose conditional writes misbehave in one chosen way. */
class MisbehavingStore extends MemoryObjectStore {
  constructor(private readonly flaw: "create-overwrites" | "if-match-ignored" | "cas-creates" | "not-implemented" | "down") {
    super();
  }

  override async create(key: string, body: Uint8Array): Promise<PutResult> {
    if (this.flaw === "down") throw new CairnError("STORE_UNREACHABLE", "connection refused");
    if (this.flaw === "not-implemented") throw new CairnError("STORE_REQUEST_FAILED", "HTTP 501 NotImplemented");
    if (this.flaw !== "create-overwrites") return super.create(key, body);
    await super.delete(key);
    return super.create(key, body);
  }

  override async casPut(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    const current = await super.get(key);
    if (this.flaw === "if-match-ignored" && current !== null && current !== "not-modified") {
      return super.casPut(key, body, current.etag);
    }
    if (this.flaw === "cas-creates" && current === null) return super.create(key, body);
    return super.casPut(key, body, etag);
  }
}

describe("assertConditionalWrites", () => {
  it("passes on a store that honours conditional writes and leaves nothing behind", async () => {
    const store = new MemoryObjectStore();
    await assertConditionalWrites(store, { random: new SeededRandom(4) });
    expect(await collect(store.list(""))).toEqual([]);
  });

  it.each([
    ["create-overwrites", "create an existing key"],
    ["if-match-ignored", "casPut with a wrong etag"],
    ["cas-creates", "casPut on a missing key"],
    ["not-implemented", "create a new key"],
  ] as const)("refuses a store where %s, naming the step %j", async (flaw, step) => {
    const store: ObjectStore = new MisbehavingStore(flaw);
    const error = await assertConditionalWrites(store).catch((reason: unknown) => reason);
    expect(error).toMatchObject({ code: "STORE_NO_CONDITIONAL_WRITES", details: { step } });
    expect((error as Error).message).toContain(`step "${step}"`);
    expect(await collect(store.list(PROBE_PREFIX))).toEqual([]);
  });

  it("reports an unreachable store as unreachable", async () => {
    await expect(assertConditionalWrites(new MisbehavingStore("down"))).rejects.toMatchObject({
      code: "STORE_UNREACHABLE",
    });
  });
});
