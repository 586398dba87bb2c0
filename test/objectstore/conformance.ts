/**
 * The ObjectStore contract suite (src/objectstore/ObjectStore.ts), run unchanged against
 * every adapter: memory, a directory, S3 against the test endpoint (with both checksum
 * settings, and in radosgw mode) and S3 against a real MinIO/S3/R2/radosgw when
 * CAIRN_TEST_S3_URL is set.
 *
 * Scenario per test: the factory hands out a fresh, empty store (a new directory, a new
 * key prefix) and a cleanup; the test exercises one clause of the contract on it.
 */
import PQueue from "p-queue";
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { assertConditionalWrites, PROBE_PREFIX } from "../../src/objectstore/assertConditionalWrites.js";
import { compareKeys } from "../../src/objectstore/keys.js";
import type { GetResult, ListEntry, ObjectStore } from "../../src/objectstore/ObjectStore.js";

export interface StoreUnderTest {
  readonly store: ObjectStore;
  /** Removes what the test left and closes the store. */
  cleanup(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreUnderTest>;

const CREATE_CONCURRENCY = 32;
const MANY_KEYS = 1_100;
const RACERS = 8;
const LARGE_BODY_BYTES = 5 * 1024 * 1024;

/** Keys whose spelling trips path handling, URL encoding or ordering somewhere. */
export const AWKWARD_KEYS = [
  "with space",
  "two  spaces/and a tab-free name",
  "plus+sign",
  "star*quote'paren()bang!",
  "double//slash",
  "/leading-slash",
  "trailing-slash/",
  "./dot",
  "../dot-dot",
  "../../etc/passwd",
  ".hidden",
  "a",
  "a/b",
  "UPPER/lower",
  "upper/lower",
  "ünïcödé/日本語",
  "é",
  "\uff21",
  "𝄞 clef",
  "percent%20encoded",
  "question?mark&amp=x#hash",
  "tilde~and,comma;semi=colon:at@",
] as const;

export function defineObjectStoreConformance(name: string, factory: StoreFactory): void {
  const withStore = async (test: (store: ObjectStore) => Promise<void>) => {
    const { store, cleanup } = await factory();
    try {
      await test(store);
    } finally {
      await cleanup();
    }
  };

  describe(`ObjectStore conformance: ${name}`, () => {
    it("round-trips empty, text and binary bodies with stable etags", () =>
      withStore(async (store) => {
        const bodies = {
          empty: new Uint8Array(0),
          text: bytes("hello, bucket"),
          binary: Uint8Array.from({ length: 512 }, (_, index) => index % 256),
        };
        for (const [key, body] of Object.entries(bodies)) {
          const { etag } = await store.create(key, body);
          expect(etag).not.toMatch(/^"|"$/);
          const read = expectBody(await store.get(key));
          expect(read.body).toEqual(body);
          expect(read.etag).toBe(etag);
        }
        expect(await store.get("missing")).toBeNull();
      }));

    it("create writes only when the key is absent", () =>
      withStore(async (store) => {
        const first = await store.create("once", bytes("first"));
        await expectConflict(store.create("once", bytes("second")));
        await expectConflict(store.create("once", bytes("first")));
        expect(expectBody(await store.get("once"))).toEqual({ body: bytes("first"), etag: first.etag });
      }));

    it("casPut replaces only the exact current etag, and never creates", () =>
      withStore(async (store) => {
        const first = await store.create("cas", bytes("v1"));
        const second = await store.casPut("cas", bytes("v2"), first.etag);
        expect(second.etag).not.toBe(first.etag);
        await expectConflict(store.casPut("cas", bytes("v3"), first.etag));
        await expectConflict(store.casPut("cas", bytes("v3"), "0123456789abcdef0123456789abcdef"));
        await expectConflict(store.casPut("absent", bytes("v1"), second.etag));
        expect(await store.get("absent")).toBeNull();
        expect(expectBody(await store.get("cas"))).toEqual({ body: bytes("v2"), etag: second.etag });
      }));

    it(`lets exactly one of ${RACERS} concurrent casPut racers win`, () =>
      withStore(async (store) => {
        const base = await store.create("race", bytes("base"));
        const outcomes = await Promise.allSettled(
          Array.from({ length: RACERS }, (_, racer) => store.casPut("race", bytes(`racer ${racer}`), base.etag)),
        );
        const winners = outcomes.flatMap((outcome, racer) => (outcome.status === "fulfilled" ? [racer] : []));
        expect(winners).toHaveLength(1);
        // A loser is told it lost, or — where the store answers losers 5xx (radosgw 16
        // answers 500) and the key then holds the winner's object — that its outcome is
        // unknown (it cannot tell "lost" from "landed and was overwritten"). Never success.
        for (const outcome of outcomes) {
          if (outcome.status === "rejected") {
            expect(["CAS_CONFLICT", "STORE_AMBIGUOUS_OUTCOME"]).toContain((outcome.reason as { code?: unknown }).code);
          }
        }
        const stored = expectBody(await store.get("race"));
        expect(stored.body).toEqual(bytes(`racer ${winners[0]}`));
        expect(stored.etag).toBe((outcomes[winners[0] as number] as PromiseFulfilledResult<{ etag: string }>).value.etag);
      }));

    it(`lists more than one page (${MANY_KEYS} keys) in order, by prefix and after a key`, () =>
      withStore(async (store) => {
        const keys = Array.from({ length: MANY_KEYS }, (_, index) => `many/${String(index).padStart(5, "0")}`);
        const queue = new PQueue({ concurrency: CREATE_CONCURRENCY });
        await queue.addAll(keys.map((key) => () => store.create(key, bytes(key))));
        for (const outside of ["man", "many", "many-more/0", "manz/0"]) await store.create(outside, bytes(outside));

        const listed = await collect(store.list("many/"));
        expect(listed.map((entry) => entry.key)).toEqual(keys);
        expect(listed[7]).toEqual({ key: keys[7], etag: expectBody(await store.get(keys[7] as string)).etag, size: 10 });

        const after = await collect(store.list("many/", { startAfter: keys[1_049] as string }));
        expect(after.map((entry) => entry.key)).toEqual(keys.slice(1_050));
        const narrow = await collect(store.list("many/005"));
        expect(narrow.map((entry) => entry.key)).toEqual(keys.slice(500, 600));
        // "-" sorts before "/", and startAfter excludes the key it names.
        const partial = await collect(store.list("many", { startAfter: "many" }));
        expect(partial.map((entry) => entry.key)).toEqual(["many-more/0", ...keys]);
        expect(await collect(store.list("nothing-here/"))).toEqual([]);
      }));

    it("deletes idempotently, one key or many, present or missing", () =>
      withStore(async (store) => {
        for (const key of ["d/1", "d/2", "d/3", "keep"]) await store.create(key, bytes(key));
        await store.delete("d/1");
        await store.delete("d/1");
        await store.delete("never-existed");
        expect(await store.get("d/1")).toBeNull();
        await store.deleteMany(["d/2", "d/3", "d/missing", "also/missing"]);
        await store.deleteMany([]);
        expect((await collect(store.list(""))).map((entry) => entry.key)).toEqual(["keep"]);
        const again = await store.create("d/1", bytes("back"));
        expect(expectBody(await store.get("d/1")).etag).toBe(again.etag);
      }));

    it("stores awkward keys verbatim and lists them in UTF-8 byte order", () =>
      withStore(async (store) => {
        for (const key of AWKWARD_KEYS) await store.create(key, bytes(`body of ${key}`));
        for (const key of AWKWARD_KEYS) expect(expectBody(await store.get(key)).body).toEqual(bytes(`body of ${key}`));
        const listed = (await collect(store.list(""))).map((entry) => entry.key);
        expect(listed).toEqual([...AWKWARD_KEYS].sort(compareKeys));
        // UTF-16 order would put the astral 𝄞 (a surrogate pair) before U+FF21.
        expect(listed.indexOf("\uff21")).toBeLessThan(listed.indexOf("𝄞 clef"));
        expect((await collect(store.list("a/"))).map((entry) => entry.key)).toEqual(["a/b"]);
        expect((await collect(store.list("double/"))).map((entry) => entry.key)).toEqual(["double//slash"]);
        expect((await collect(store.list("../"))).map((entry) => entry.key)).toEqual(["../../etc/passwd", "../dot-dot"]);
      }));

    it("round-trips a 5 MB body", () =>
      withStore(async (store) => {
        const body = new SeededRandom(5).bytes(LARGE_BODY_BYTES);
        const { etag } = await store.create("large", body);
        const read = expectBody(await store.get("large"));
        expect(read.etag).toBe(etag);
        expect(read.body.byteLength).toBe(LARGE_BODY_BYTES);
        expect(Buffer.compare(read.body, body)).toBe(0);
        expect((await collect(store.list("large")))[0]?.size).toBe(LARGE_BODY_BYTES);
      }));

    it("answers not-modified to a GET whose etag is current", () =>
      withStore(async (store) => {
        const first = await store.create("cached", bytes("one"));
        expect(await store.get("cached", { ifNoneMatch: first.etag })).toBe("not-modified");
        const second = await store.casPut("cached", bytes("two"), first.etag);
        expect(expectBody(await store.get("cached", { ifNoneMatch: first.etag }))).toEqual({
          body: bytes("two"),
          etag: second.etag,
        });
        expect(await store.get("cached", { ifNoneMatch: second.etag })).toBe("not-modified");
        expect(await store.get("uncached", { ifNoneMatch: second.etag })).toBeNull();
      }));

    it("passes the conditional-write probe and leaves nothing behind", () =>
      withStore(async (store) => {
        await assertConditionalWrites(store);
        expect(await collect(store.list(PROBE_PREFIX))).toEqual([]);
      }));
  });
}

export function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export async function collect(entries: AsyncIterable<ListEntry>): Promise<ListEntry[]> {
  const collected: ListEntry[] = [];
  for await (const entry of entries) collected.push(entry);
  return collected;
}

export function expectBody(result: GetResult | null | "not-modified"): GetResult {
  if (result === null || result === "not-modified") throw new Error(`expected a body, got ${String(result)}`);
  return { body: new Uint8Array(result.body), etag: result.etag };
}

export async function expectConflict(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error, "expected CAS_CONFLICT, but the write succeeded").toBeDefined();
  expect((error as { code?: unknown }).code).toBe("CAS_CONFLICT");
}

/** Removes every key of `store` (the cleanup of one test's prefix or directory). */
export async function emptyStore(store: ObjectStore): Promise<void> {
  const keys = (await collect(store.list(""))).map((entry) => entry.key);
  await store.deleteMany(keys);
}
