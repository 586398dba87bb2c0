/**
 * Scenario: the generic CAS object under manifests, globals and watermarks — versions
 * and nonces on every write, conflicts on stale etags, and a lost response resolved by
 * re-reading for our nonce.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ManualClock } from "../../src/base/clock.js";
import { isCasConflict } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { CasObject, jsonCasCodec } from "../../src/manifest/CasObject.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";

const counterSchema = z.object({ version: z.number(), nonce: z.string(), count: z.number() });
const codec = jsonCasCodec(counterSchema, "MANIFEST_INVALID", "counter");

function setup(seed = 1) {
  const random = new SeededRandom(seed);
  const store = new FaultyObjectStore(new MemoryObjectStore(), random, new ManualClock());
  return { store, object: new CasObject(store, "counter", codec, random) };
}

describe("CasObject", () => {
  it("creates at version 1 and bumps the version with a fresh nonce on every replace", async () => {
    const { object } = setup();
    const created = await object.create({ count: 0 });
    expect(created.value.version).toBe(1);
    const replaced = await object.replace(created, { count: 0 });
    expect(replaced.value.version).toBe(2);
    expect(replaced.value.nonce).not.toBe(created.value.nonce);
    expect(replaced.etag).not.toBe(created.etag);
    expect((await object.read())?.value).toEqual(replaced.value);
  });

  it("refuses a second create and a replace with a stale etag", async () => {
    const { object } = setup();
    const created = await object.create({ count: 0 });
    await expect(object.create({ count: 1 })).rejects.toSatisfy(isCasConflict);
    await object.replace(created, { count: 1 });
    await expect(object.replace(created, { count: 2 })).rejects.toSatisfy(isCasConflict);
    expect((await object.read())?.value.count).toBe(1);
  });

  it("answers a conditional read from cache when nothing changed", async () => {
    const { object, store } = setup();
    const created = await object.create({ count: 0 });
    const refreshed = await object.refresh(created);
    expect(refreshed).toBe(created);
    expect(store.calls.get).toBe(1);
  });

  it("resolves a lost response to its own landed write", async () => {
    const { object, store } = setup();
    const created = await object.create({ count: 0 });
    store.inject({ operations: ["casPut"], once: true, effect: "lose-response" });
    const replaced = await object.replace(created, { count: 5 });
    expect(replaced.value.count).toBe(5);
    expect((await object.read())?.etag).toBe(replaced.etag);
  });

  it("turns a lost response into a conflict when another write won", async () => {
    const { object, store } = setup();
    const created = await object.create({ count: 0 });
    // Our write lands, then another writer (same etag knowledge is impossible, so it CASes
    // on our result) overwrites before we re-read: we must not claim success.
    const other = new CasObject(store, "counter", codec, new SeededRandom(99));
    store.inject({ operations: ["casPut"], once: true, effect: "lose-response" });
    const original = store.get.bind(store);
    let intercepted = false;
    store.get = async (key, options) => {
      if (!intercepted) {
        intercepted = true;
        const current = await other.read();
        if (current) await other.replace(current, { count: 100 });
      }
      return original(key, options);
    };
    await expect(object.replace(created, { count: 5 })).rejects.toSatisfy(isCasConflict);
    expect((await object.read())?.value.count).toBe(100);
  });

  it("update() retries after conflicts until the mutation sticks", async () => {
    const { object } = setup();
    await object.create({ count: 0 });
    await Promise.all(
      Array.from({ length: 8 }, () => object.update((current) => ({ count: (current?.count ?? 0) + 1 }), 64)),
    );
    expect((await object.read())?.value.count).toBe(8);
  });

  it("reports a body that fails its schema as the codec's corruption code", async () => {
    const { store, object } = setup();
    await store.create("counter", new TextEncoder().encode('{"version":1}'));
    await expect(object.read()).rejects.toMatchObject({ code: "MANIFEST_INVALID", kind: "Corruption" });
    await store.delete("counter");
    await store.create("counter", new TextEncoder().encode("not json"));
    await expect(object.read()).rejects.toMatchObject({ code: "MANIFEST_INVALID" });
  });
});
