/**
 * Scenario: opening local stores. A new file gets the schema and initial meta; a warm
 * reopen keeps data and meta; a file of another shard or deployment, of an unknown
 * schema version, or that is not a Cairn store is refused with a typed error and left
 * byte-for-byte unchanged; a closed store refuses every call.
 */
import { readFileSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { LOCAL_PAGE_BYTES } from "../../src/base/limits.js";
import { LocalStore, SCHEMA_VERSION } from "../../src/local/index.js";
import { DEPLOYMENT, batch, entry, ids, key, revision, thrown, localFixtures } from "./localFixtures.js";

const { dirs, stores } = localFixtures();

describe("LocalStore.open", () => {
  it("creates a new store with initial meta", () => {
    for (const path of [dirs.file(), ":memory:"]) {
      const store = stores.open(path, 3);
      expect(store.meta()).toEqual({
        shard: 3,
        deploymentId: DEPLOYMENT,
        appliedSeqno: -1,
        epoch: 0,
        lastHash: null,
        frontierTs: 0,
        minReadableTs: 0,
      });
      expect(store.maxTs()).toBe(0);
    }
  });

  it("uses WAL mode for files", () => {
    const path = dirs.file();
    stores.open(path).close();
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.prepare("SELECT schema_version FROM meta").pluck().get()).toBe(SCHEMA_VERSION);
    } finally {
      raw.close();
    }
  });

  it("creates files with LOCAL_PAGE_BYTES pages and keeps the page size of a file made with another", async () => {
    const pageBytesOf = (path: string) => {
      const raw = new Database(path, { readonly: true });
      try {
        return raw.pragma("page_size", { simple: true });
      } finally {
        raw.close();
      }
    };
    const fresh = dirs.file();
    stores.open(fresh).close();
    expect(pageBytesOf(fresh)).toBe(LOCAL_PAGE_BYTES);

    // A file whose header already says 4 KiB (as every file before this page size did).
    const older = dirs.file();
    const raw = new Database(older);
    raw.pragma("page_size = 4096");
    raw.pragma("journal_mode = WAL");
    raw.close();
    const [a] = ids(1);
    const store = stores.open(older);
    store.apply(batch({ revisions: [revision(a!, 100, '{"x":1}')], indexUpdates: [entry(7, key("x"), 100, a!)], meta: { appliedSeqno: 0, frontierTs: 100 } }));
    await store.flush();
    store.close();
    expect(pageBytesOf(older)).toBe(4096);
    const reopened = stores.open(older);
    expect(reopened.get(a!, 100)).toEqual({ value: '{"x":1}', ts: 100 });
    expect(reopened.durableMeta().appliedSeqno).toBe(0);
  });

  it("keeps data and meta across a warm reopen", async () => {
    const path = dirs.file();
    const [a] = ids(1);
    const first = stores.open(path, 2);
    first.apply(
      batch({
        revisions: [revision(a!, 100, '{"x":1}')],
        indexUpdates: [entry(7, key("x"), 100, a!)],
        meta: { appliedSeqno: 4, epoch: 2, lastHash: "ab12", frontierTs: 100 },
      }),
    );
    await first.pruneHistory(50);
    const metaBefore = first.meta();
    await first.flush();
    first.close();
    const second = stores.open(path, 2);
    expect(second.meta()).toEqual(metaBefore);
    expect(second.get(a!, 100)).toEqual({ value: '{"x":1}', ts: 100 });
    expect(second.indexScan(7, { start: new Uint8Array(0), end: null }, 100, "asc", 10).map((row) => row.id)).toEqual([a]);
  });

  it("refuses a file of another shard or deployment and leaves it unchanged", async () => {
    const path = dirs.file();
    const [a] = ids(1);
    const store = stores.open(path, 1);
    store.apply(batch({ revisions: [revision(a!, 5, "{}")], meta: { appliedSeqno: 0, frontierTs: 5 } }));
    await store.flush();
    store.close();
    const bytesBefore = readFileSync(path);
    expect(thrown(() => LocalStore.open({ path, shard: 2, deploymentId: DEPLOYMENT })).code).toBe("LOCAL_META_MISMATCH");
    expect(thrown(() => LocalStore.open({ path, shard: 1, deploymentId: "other" })).code).toBe("LOCAL_META_MISMATCH");
    expect(readFileSync(path).equals(bytesBefore)).toBe(true);
    const reopened = stores.open(path, 1);
    expect(reopened.meta().appliedSeqno).toBe(0);
    expect(reopened.get(a!, 5)).toEqual({ value: "{}", ts: 5 });
  });

  it("refuses an unknown schema version", () => {
    const path = dirs.file();
    stores.open(path).close();
    const raw = new Database(path);
    raw.prepare("UPDATE meta SET schema_version = ?").run(SCHEMA_VERSION + 1);
    raw.close();
    const bytesBefore = readFileSync(path);
    const error = thrown(() => LocalStore.open({ path, shard: 0, deploymentId: DEPLOYMENT }));
    expect(error.code).toBe("LOCAL_SCHEMA_UNSUPPORTED");
    expect(error.message).toContain(`version ${SCHEMA_VERSION + 1}`);
    expect(readFileSync(path).equals(bytesBefore)).toBe(true);
  });

  it("refuses a SQLite file that is not a Cairn store, and a file that is not SQLite", () => {
    const foreign = dirs.file("foreign.sqlite");
    const raw = new Database(foreign);
    raw.exec("CREATE TABLE t (x)");
    raw.close();
    expect(thrown(() => LocalStore.open({ path: foreign, shard: 0, deploymentId: DEPLOYMENT })).code).toBe("LOCAL_SCHEMA_UNSUPPORTED");
    const garbage = dirs.file("garbage.sqlite");
    writeFileSync(garbage, "this is not a database, just text that is long enough to have a header".repeat(20));
    expect(thrown(() => LocalStore.open({ path: garbage, shard: 0, deploymentId: DEPLOYMENT })).code).toBe("LOCAL_SCHEMA_UNSUPPORTED");
  });

  it("rejects bad options with INVALID_ARGUMENT", () => {
    const bad = [
      { path: "", shard: 0, deploymentId: DEPLOYMENT },
      { path: ":memory:", shard: -1, deploymentId: DEPLOYMENT },
      { path: ":memory:", shard: 1.5, deploymentId: DEPLOYMENT },
      { path: ":memory:", shard: 0, deploymentId: "" },
      { path: `${dirs.make()}/missing-dir/x.sqlite`, shard: 0, deploymentId: DEPLOYMENT },
    ];
    for (const options of bad) expect(thrown(() => LocalStore.open(options)).code).toBe("INVALID_ARGUMENT");
  });

  it("drops staging tables a crashed restore left behind", () => {
    const path = dirs.file();
    stores.open(path).close();
    const raw = new Database(path);
    raw.exec("CREATE TABLE restore_documents (x); CREATE TABLE restore_receipts (y)");
    raw.close();
    stores.open(path).close();
    const check = new Database(path, { readonly: true });
    try {
      const tables = check.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all();
      expect(tables).toEqual(["documents", "index_entries", "meta", "receipts"]);
    } finally {
      check.close();
    }
  });

  it("refuses every call once closed; close is idempotent", async () => {
    const store = stores.open(":memory:");
    const [a] = ids(1);
    store.close();
    store.close();
    const range = { start: new Uint8Array(0), end: null };
    const calls: (() => unknown)[] = [
      () => store.meta(),
      () => store.apply(batch({})),
      () => store.get(a!, 1),
      () => store.getMany([a!], 1),
      () => store.indexScan(1, range, 1, "asc", 1),
      () => store.count(1, range, 1),
      () => store.changes(0, 1, 1),
      () => store.receipt("c", 1),
      () => store.maxTs(),
    ];
    for (const call of calls) expect(thrown(call).code).toBe("LOCAL_CLOSED");
    for (const call of [() => store.openDumpCursor(), () => store.pruneHistory(1), () => store.flush()]) {
      await expect(call()).rejects.toMatchObject({ code: "LOCAL_CLOSED" });
    }
    await expect(store.restore([], { appliedSeqno: 0, epoch: 0, lastHash: null, frontierTs: 0 })).rejects.toMatchObject({
      code: "LOCAL_CLOSED",
    });
  });
});
