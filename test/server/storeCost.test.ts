/**
 * Scenario: the store's request cost. Counts per operation are priced at S3 Standard's
 * request prices and extrapolated to an hour from the window they cover (a young node's
 * minutes count as an hour's share, its first seconds as a minute's); odd counts and
 * unknown operations are handled. The rolling window, on a manual clock, counts the last
 * hour's requests in minute buckets, forgets older ones, and says what span it covers —
 * the store's own calls recorded through a real ObservedObjectStore.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { ObservedObjectStore } from "../../src/objectstore/ObservedObjectStore.js";
import { COST_EXTRAPOLATION_WINDOW_MS_MIN, requestsCostPerHour, S3_STANDARD_REQUEST_PRICES_USD_PER_1000, StoreRequestWindow } from "../../src/server/storeCost.js";

const HOUR_MS = 3_600_000;

describe("requests cost per hour", () => {
  it("prices each operation at S3 Standard's request prices", () => {
    expect(S3_STANDARD_REQUEST_PRICES_USD_PER_1000).toEqual({ get: 0.0004, create: 0.005, casPut: 0.005, delete: 0, deleteMany: 0.005, list: 0.005 });
    const counts = { get: 10_000, create: 1_000, casPut: 1_000, delete: 500, deleteMany: 2, list: 100 };
    // 0.004 (GET) + 0.01 (PUTs) + 0 (DELETE) + 0.00001 (DeleteObjects) + 0.0005 (LIST)
    expect(requestsCostPerHour(counts, HOUR_MS)).toEqual({ requestsUsd: 0.01451, prices: S3_STANDARD_REQUEST_PRICES_USD_PER_1000 });
  });

  it("extrapolates a partial window to an hour, never from less than a minute", () => {
    expect(requestsCostPerHour({ create: 1_000 }, HOUR_MS / 2).requestsUsd).toBe(0.01);
    expect(requestsCostPerHour({ create: 1_000 }, 2 * HOUR_MS).requestsUsd).toBe(0.0025);
    const firstMinute = requestsCostPerHour({ create: 10 }, COST_EXTRAPOLATION_WINDOW_MS_MIN).requestsUsd;
    expect(firstMinute).toBe(0.003);
    for (const windowMs of [0, 1, 1_000, -5]) expect(requestsCostPerHour({ create: 10 }, windowMs).requestsUsd).toBe(firstMinute);
    expect(requestsCostPerHour({ create: 10 }, Number.NaN).requestsUsd).toBe(0.00005);
  });

  it("prices an unknown operation like a GET and counts nonsense as nothing", () => {
    expect(requestsCostPerHour({ head: 1_000 }, HOUR_MS).requestsUsd).toBe(0.0004);
    expect(requestsCostPerHour({ get: Number.NaN, create: -3, list: Number.POSITIVE_INFINITY, toString: 1_000 }, HOUR_MS).requestsUsd).toBe(0.0004);
    expect(requestsCostPerHour({}, HOUR_MS).requestsUsd).toBe(0);
  });
});

describe("store request window", () => {
  it("counts a young node's requests over the time since it started", async () => {
    const clock = new ManualClock();
    const window = new StoreRequestWindow(clock);
    const store = new ObservedObjectStore(new MemoryObjectStore(), (call) => window.record(call.operation), () => clock.monotonicMs());
    await store.create("a", new Uint8Array([1]));
    await store.get("a");
    await store.get("missing");
    for await (const _ of store.list("")) void _;
    clock.advance(30_000);
    await store.deleteMany(["a"]);
    expect(window.lastHour()).toEqual({ requestsLastHour: { create: 1, get: 2, list: 1, deleteMany: 1 }, windowMs: 30_000 });
  });

  it("forgets requests older than the hour's minute buckets and reports the span it covers", () => {
    const clock = new ManualClock(0);
    const window = new StoreRequestWindow(clock);
    // One GET at the start of each minute for 90 minutes, then 30 s into minute 90.
    for (let minute = 0; minute < 90; minute++) {
      window.record("get");
      if (minute % 10 === 0) window.record("casPut");
      clock.advance(60_000);
    }
    clock.advance(30_000);
    // Minutes 31..90 are the window: 59 GETs (31..89) and 5 casPuts (40, 50, 60, 70, 80).
    expect(window.lastHour()).toEqual({ requestsLastHour: { get: 59, casPut: 5 }, windowMs: 59 * 60_000 + 30_000 });
    // An hour of silence empties it.
    clock.advance(HOUR_MS);
    expect(window.lastHour().requestsLastHour).toEqual({});
  });

  it("keeps a bucket per minute however many requests come", () => {
    const clock = new ManualClock(0);
    const window = new StoreRequestWindow(clock);
    for (let call = 0; call < 100_000; call++) window.record(call % 2 === 0 ? "get" : "create");
    expect(window.lastHour().requestsLastHour).toEqual({ get: 50_000, create: 50_000 });
  });

  it("refuses a window that is not a whole number of buckets", () => {
    const clock = new ManualClock();
    expect(() => new StoreRequestWindow(clock, 90_000)).toThrow(/whole number of buckets/);
    expect(() => new StoreRequestWindow(clock, HOUR_MS, 0)).toThrow(/bucketMs/);
  });
});
