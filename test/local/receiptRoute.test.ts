/**
 * Scenario: a receipt's route. A receipt with a route (ROUTE_BYTES bytes) and one without
 * (null) read back as applied from the overlay, from the file once folded (a BLOB and a
 * NULL in `receipts.route`), after a reopen, in a dump, and from another store restored
 * from that dump (rows checked deeply or not). Apply and restore refuse a route of the
 * wrong length or type with their usual error codes, writing nothing.
 */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { routeOfValue } from "../../src/functions/routing.js";
import type { DumpChunk, LocalStore } from "../../src/local/index.js";
import type { ClientReceipt } from "../../src/model/Revision.js";
import { ROUTE_BYTES } from "../../src/model/shardFor.js";
import { batch, DEPLOYMENT, receipt, rejected, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

const ROUTED = receipt("client", 1, 10, '"routed"', routeOfValue("channel-7"));
const UNROUTED = receipt("client", 2, 10, '"unrouted"');
/** Folds only when asked, so a test sees the overlay first. */
const MANUAL_FOLD = { minRows: Number.MAX_SAFE_INTEGER, delayMs: 3_600_000 };

function applyBoth(store: LocalStore): void {
  store.apply(batch({ receipts: [ROUTED, UNROUTED], meta: { appliedSeqno: 0, frontierTs: 10 } }));
}

/** The two receipts as the store returns them, routes as hex (SQLite hands back Buffers). */
function storedRoutes(store: LocalStore): (string | null | undefined)[] {
  return [store.receipt("client", 1), store.receipt("client", 2)].map((found) => (found === null ? undefined : routeHex(found.route)));
}

function routeHex(route: Uint8Array | null): string | null {
  return route === null ? null : Buffer.from(route).toString("hex");
}

const EXPECTED = [routeHex(ROUTED.route), null];

async function dumpOf(store: LocalStore): Promise<DumpChunk[]> {
  const cursor = await store.openDumpCursor();
  const chunks: DumpChunk[] = [];
  for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) chunks.push(chunk);
  cursor.close();
  return chunks;
}

describe("a receipt's route", () => {
  it("reads back from the overlay, from the file once folded, and after a reopen", async () => {
    const path = dirs.file();
    const store = stores.open(path, 0, DEPLOYMENT, MANUAL_FOLD);
    applyBoth(store);
    expect(store.unfoldedRows).toBe(2);
    expect(storedRoutes(store)).toEqual(EXPECTED);
    await store.flush();
    expect(store.unfoldedRows).toBe(0);
    expect(storedRoutes(store)).toEqual(EXPECTED);
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.prepare("SELECT seq, typeof(route) AS type, length(route) AS bytes FROM receipts ORDER BY seq").all()).toEqual([
        { seq: 1, type: "blob", bytes: ROUTE_BYTES },
        { seq: 2, type: "null", bytes: null },
      ]);
    } finally {
      raw.close();
    }
    store.close();
    expect(storedRoutes(stores.open(path))).toEqual(EXPECTED);
  });

  it("is in a dump, and in a store restored from it", async () => {
    for (const recordsChecked of [false, true]) {
      const source = stores.open(":memory:");
      applyBoth(source);
      await source.flush();
      const chunks = await dumpOf(source);
      const dumped = chunks.flatMap((chunk) => (chunk.kind === "receipts" ? chunk.rows : []));
      expect(dumped.map((row) => routeHex(row.route))).toEqual(EXPECTED);
      const target = stores.open(dirs.file());
      await target.restore(chunks, { appliedSeqno: 0, epoch: 1, lastHash: null, frontierTs: 10 }, { recordsChecked });
      expect(storedRoutes(target)).toEqual(EXPECTED);
    }
  });

  const invalid: [string, ClientReceipt][] = [
    ["a route one byte short", receipt("c", 1, 20, "null", new Uint8Array(ROUTE_BYTES - 1))],
    ["a route one byte long", receipt("c", 1, 20, "null", new Uint8Array(ROUTE_BYTES + 1))],
    ["an empty route", receipt("c", 1, 20, "null", new Uint8Array(0))],
    ["a route that is not bytes", { ...receipt("c", 1, 20), route: "0123456789abcdef" as unknown as Uint8Array }],
    ["a missing route", { ...receipt("c", 1, 20), route: undefined as unknown as null }],
  ];

  it.each(invalid)("refuses %s in apply and in restore, writing nothing", async (_name, bad) => {
    const store = stores.open(dirs.file());
    applyBoth(store);
    const error = thrown(() => store.apply(batch({ receipts: [bad], meta: { appliedSeqno: 1, frontierTs: 20 } })));
    expect(error).toMatchObject({ code: "LOCAL_APPLY_INVALID", message: expect.stringMatching(/receipt #0: route must be null or a Uint8Array of 8 bytes/) });
    expect(store.meta().appliedSeqno).toBe(0);
    for (const recordsChecked of [false, true]) {
      const restoring = store.restore([{ kind: "receipts", rows: [bad] }], { appliedSeqno: 5, epoch: 1, lastHash: null, frontierTs: 20 }, { recordsChecked });
      expect(await rejected(restoring)).toMatchObject({ code: "LOCAL_RESTORE_INVALID", message: expect.stringMatching(/route must be null/) });
    }
    expect(store.meta().appliedSeqno).toBe(0);
    expect(storedRoutes(store)).toEqual(EXPECTED);
  });
});
