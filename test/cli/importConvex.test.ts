/**
 * Scenario: `cairn import` of a Convex snapshot export (one folder per table with
 * documents.jsonl, beside system folders), as a user runs it in a child process over a
 * directory bucket: every document arrives with a Cairn id, references (a plain `v.id`, and
 * one inside a union with null) point at the right documents, in a table sharded by
 * channel too, and Convex's value encoding ($integer, $float, $bytes) decodes; a second run
 * writes nothing twice, also from the export zipped. A ZIP with an entry outside its folder,
 * and a file that is no ZIP, are refused. A reference into a sharded table that the export does not hold, a
 * table the schema lacks, and a malformed value are refused with nothing written.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { openObjectStore } from "../../src/objectstore/index.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { runCairn } from "../support/runCairn.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import { zipFolder } from "../../src/cli/zipArchive.js";
import * as convexImportApp from "./convexImportApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-import-convex-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const APP = "test/cli/convexImportApp.ts";
const app = App.fromModule(convexImportApp, "convex import app");
let directories = 0;
const fresh = (name: string) => join(root, `${name}-${directories++}`);

const int64 = (value: bigint) => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64LE(value);
  return { $integer: bytes.toString("base64") };
};
const float = (value: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleLE(value);
  return { $float: bytes.toString("base64") };
};

/** A Convex export folder: tables, and the system folders Convex writes beside them. */
function convexExport(tables: Record<string, readonly object[]>): string {
  const folder = fresh("convex");
  for (const [name, documents] of Object.entries(tables)) {
    mkdirSync(join(folder, name), { recursive: true });
    writeFileSync(join(folder, name, "documents.jsonl"), documents.map((document) => `${JSON.stringify(document)}\n`).join(""));
  }
  mkdirSync(join(folder, "_tables"), { recursive: true });
  writeFileSync(join(folder, "_tables", "documents.jsonl"), `${JSON.stringify({ name: "users", id: 10001 })}\n`);
  mkdirSync(join(folder, "_storage"), { recursive: true });
  return folder;
}

const USERS = [
  { _id: "k17ada", _creationTime: 1_700_000_000_000.5, name: "ada", age: int64(36n), avatar: { $bytes: Buffer.from([1, 2, 3]).toString("base64") } },
  { _id: "k17bob", _creationTime: 1_700_000_000_001.5, name: "bob", age: int64(-9_007_199_254_740_993n) },
];
const MESSAGES = [
  { _id: "m1", _creationTime: 1_700_000_000_002.5, author: "k17ada", channel: "general", body: "hello", score: 1.5, replyTo: null },
  { _id: "m2", _creationTime: 1_700_000_000_003.5, author: "k17bob", channel: "random", body: "hi ada", score: float(Number.NaN), replyTo: "m1" },
  { _id: "m3", _creationTime: 1_700_000_000_004.5, author: "k17ada", channel: "dev", body: "a thread", score: float(Number.NEGATIVE_INFINITY), replyTo: "m2" },
];

async function threadsIn(bucket: string): Promise<unknown[]> {
  const store = await openObjectStore(bucket);
  const sharded = await ShardedStore.open({ store, localDirectory: fresh("reader"), nodeId: `reader-${directories}`, mustExist: true });
  try {
    await sharded.acquireAll();
    const runtime = await shardedRuntime(sharded, store, app, systemRandom);
    return (await runtime.runQuery("messages:threads", {})).value as unknown[];
  } finally {
    await sharded.close();
    await store.close();
  }
}

async function keysOf(bucket: string): Promise<string[]> {
  const store = await openObjectStore(bucket);
  const keys: string[] = [];
  for await (const entry of store.list("")) keys.push(entry.key);
  await store.close();
  return keys;
}

describe("cairn import of a Convex export", () => {
  it("maps ids and references, decodes Convex's values, is idempotent, and refuses what it cannot map", { timeout: 120_000 }, async () => {
    const folder = convexExport({ users: USERS, messages: MESSAGES });
    const bucket = fresh("bucket");
    const imported = await runCairn(["import", "--store", bucket, "--local", fresh("local"), "--from", folder, "--app", APP, "--shards", "2"]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/imported 5 document\(s\) from .* \(a Convex export: ids mapped\): 5 written, 0 there already/);
    expect(await threadsIn(bucket)).toEqual([
      { body: "a thread", author: "ada", age: "36", avatar: 3, score: Number.NEGATIVE_INFINITY, replyTo: "hi ada", channel: "dev" },
      { body: "hello", author: "ada", age: "36", avatar: 3, score: 1.5, replyTo: null, channel: "general" },
      { body: "hi ada", author: "bob", age: "-9007199254740993", avatar: null, score: Number.NaN, replyTo: "hello", channel: "random" },
    ]);
    const again = await runCairn(["import", "--store", bucket, "--local", fresh("local"), "--from", folder, "--app", APP]);
    expect(again.stdout).toMatch(/: 0 written, 5 there already/);

    // Refusals: nothing written, not even a new deployment.
    const refusals: [Record<string, readonly object[]>, RegExp][] = [
      [{ users: USERS, messages: [...MESSAGES, { ...MESSAGES[0]!, _id: "m4", replyTo: "not-in-the-export" }] }, /IMPORT_INVALID.*messages\/documents\.jsonl:4.*replyTo/],
      [{ users: USERS, messages: MESSAGES, comments: [{ _id: "c1", _creationTime: 1, text: "?" }] }, /IMPORT_INVALID.*table comments, which the app's schema does not have/],
      [{ users: [{ ...USERS[0]!, age: { $integer: "AAAA" } }] }, /IMPORT_INVALID.*users\/documents\.jsonl:1.*\$integer must be 8 bytes/],
      [{ users: [USERS[0]!, { ...USERS[1]!, _id: "k17ada" }] }, /IMPORT_INVALID.*one _id twice/],
    ];
    for (const [tables, message] of refusals) {
      const target = fresh("refused");
      const refused = await runCairn(["import", "--store", target, "--local", fresh("local"), "--from", convexExport(tables), "--app", APP]);
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toMatch(message);
      expect(await keysOf(target)).toEqual([]);
    }
    // Zipped, as `npx convex export --path x.zip` writes it: the same documents, found there already.
    const zip = join(fresh("zipped"), "snapshot.zip");
    mkdirSync(dirname(zip));
    await zipFolder(folder, zip);
    const fromZip = await runCairn(["import", "--store", bucket, "--local", fresh("local"), "--from", zip, "--app", APP]);
    expect(fromZip.stdout, fromZip.stderr).toMatch(/from .*snapshot\.zip \(a Convex export: ids mapped\): 0 written, 5 there already/);
    // A ZIP whose entry would land outside the folder it is unpacked into (a "zip slip"), and one that is no ZIP.
    const slip = join(fresh("slip"), "evil.zip");
    mkdirSync(dirname(slip));
    const staged = fresh("staged");
    mkdirSync(join(staged, "xx"), { recursive: true });
    writeFileSync(join(staged, "xx", "evil.jsonl"), "{}\n");
    await zipFolder(staged, slip);
    const bytes = readFileSync(slip);
    for (let at = bytes.indexOf("xx/evil.jsonl"); at !== -1; at = bytes.indexOf("xx/evil.jsonl", at + 1)) bytes.write("..", at);
    writeFileSync(slip, bytes);
    writeFileSync(join(dirname(slip), "not.zip"), "PK but not really");
    for (const [archive, message] of [[slip, /IMPORT_INVALID.*evil\.zip is damaged \(invalid relative path: \.\.\/evil\.jsonl\)/], [join(dirname(slip), "not.zip"), /IMPORT_INVALID.*not\.zip is not a readable ZIP archive/]] as const) {
      const target = fresh("refused");
      const refused = await runCairn(["import", "--store", target, "--local", fresh("local"), "--from", archive, "--app", APP]);
      expect(refused.stderr).toMatch(message);
      expect(await keysOf(target)).toEqual([]);
      expect(existsSync(join(dirname(slip), "..", "evil.jsonl"))).toBe(false);
    }

    // The folder is the user's: the conversion happens in a work folder, nothing is added to it.
    expect(readdirSync(folder).sort()).toEqual(["_storage", "_tables", "messages", "users"]);
  });
});
