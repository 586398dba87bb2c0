/**
 * Scenario: `cairn export` then `cairn import` as a user runs them, in real child
 * processes over directory buckets: the imported deployment holds the source's documents
 * one for one — ids, creation times, fields, index entries — and a second import writes
 * nothing twice. Archives that are truncated, malformed, at odds with the schema, or that
 * collide with different documents are refused with a clear error and change nothing
 * (a refused import into a new bucket does not even create the deployment).
 */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { runCairn } from "../support/runCairn.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-import-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const app = App.fromModule(historyApp, "history test app");
const APP = "test/shard/historyApp.ts";
let directories = 0;
const fresh = (name: string) => join(root, `${name}-${directories++}`);

/** The lines of an export's notes file, sorted: every document with its id and creation time. */
function exportedLines(folder: string): string[] {
  return readFileSync(join(folder, "notes", "documents.jsonl"), "utf8").trimEnd().split("\n").sort();
}

async function exportOf(bucket: string): Promise<string> {
  const folder = fresh("export");
  const run = await runCairn(["export", "--store", bucket, "--to", folder]);
  expect(run.stderr).not.toMatch(/cairn: \[/);
  expect(run.code).toBe(0);
  return folder;
}

async function importInto(bucket: string, from: string) {
  return runCairn(["import", "--store", bucket, "--local", fresh("local"), "--from", from, "--app", APP]);
}

describe("cairn export and cairn import", () => {
  it("moves a deployment document for document, writes nothing twice, and refuses bad archives changing nothing", { timeout: 180_000 }, async () => {
    // A stopped 2-shard source: 400 notes, a third of them edited, a sixth deleted.
    const source = fresh("source");
    const store = new FsObjectStore(source);
    const node = await ShardedStore.open({ store, localDirectory: fresh("seed"), nodeId: "seed", numShards: 2 });
    await node.acquireAll();
    const runtime = await shardedRuntime(node, store, app, systemRandom);
    const ids: string[] = [];
    for (let n = 0; n < 400; n++) ids.push((await runtime.runMutation("notes:add", { channel: `c${n % 7}`, n, body: `note ${n} ✓` })).value as string);
    for (let n = 0; n < 400; n += 3) await runtime.runMutation("notes:edit", { id: ids[n]!, channel: `c${n % 7}`, body: `edited ${n}` });
    for (let n = 1; n < 400; n += 6) await runtime.runMutation("notes:remove", { id: ids[n]!, channel: `c${n % 7}` });
    await node.close();
    await store.close();
    const archive = await exportOf(source);
    const lines = exportedLines(archive);
    expect(lines).toHaveLength(400 - 67);

    // Into a new bucket: the same documents, ids and creation times included.
    const target = fresh("target");
    const imported = await importInto(target, archive);
    expect(imported.stderr).not.toMatch(/cairn: \[/);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/imported 333 document\(s\) from .*: 333 written, 0 there already/);
    expect(exportedLines(await exportOf(target))).toEqual(lines);
    // Its indexes answer as the source's do.
    const check = new FsObjectStore(target);
    const reader = await ShardedStore.open({ store: check, localDirectory: fresh("reader"), nodeId: "reader", mustExist: true });
    await reader.acquireAll();
    const onTarget = await shardedRuntime(reader, check, app, systemRandom);
    const ns = (await onTarget.runQuery("notes:inChannel", { channel: "c3" })).value as number[];
    expect(ns).toEqual([...Array(400).keys()].filter((n) => n % 7 === 3 && n % 6 !== 1));
    await reader.close();
    await check.close();

    // Again: nothing written twice.
    const again = await importInto(target, archive);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/: 0 written, 333 there already/);

    // As a ZIP: exported into one (refused over an existing file), imported from it.
    const zip = join(fresh("zipped"), "source.zip");
    mkdirSync(dirname(zip));
    const zipped = await runCairn(["export", "--store", source, "--to", zip]);
    expect(zipped.stdout, zipped.stderr).toMatch(/zipped into .*source\.zip/);
    expect(readdirSync(dirname(zip)), "only the ZIP is left").toEqual(["source.zip"]);
    expect((await runCairn(["export", "--store", source, "--to", zip])).stderr).toMatch(/INVALID_ARGUMENT.*source\.zip exists/);
    const fromZip = fresh("from-zip");
    expect((await importInto(fromZip, zip)).stdout).toMatch(/: 333 written, 0 there already/);
    expect(exportedLines(await exportOf(fromZip))).toEqual(lines);

    // Bad archives, each into a new bucket: refused, and the bucket stays empty.
    const bad = (name: string, damage: (folder: string) => void) => {
      const folder = fresh(name);
      cpSync(archive, folder, { recursive: true });
      damage(folder);
      return folder;
    };
    const notesFile = (folder: string) => join(folder, "notes", "documents.jsonl");
    const cases: [string, RegExp][] = [
      [bad("truncated", (folder) => writeFileSync(notesFile(folder), readFileSync(notesFile(folder), "utf8").split("\n").slice(0, 100).join("\n"))), /IMPORT_INVALID.*only 100 document\(s\), the manifest says 333/],
      [bad("grown", (folder) => appendFileSync(notesFile(folder), `${readFileSync(notesFile(folder), "utf8").split("\n")[0]}\n`)), /IMPORT_INVALID.*more than 333/],
      [bad("schema", (folder) => writeFileSync(notesFile(folder), readFileSync(notesFile(folder), "utf8").replace(/"n":(\d+)/, '"n":"$1"'))), /IMPORT_INVALID.*notes\/documents.jsonl:1: .*n/],
      [bad("malformed", (folder) => writeFileSync(notesFile(folder), readFileSync(notesFile(folder), "utf8").replace(/^\{/, "{{"))), /IMPORT_INVALID.*notes\/documents.jsonl:1: not a document/],
      [bad("unfinished", (folder) => rmSync(join(folder, "cairn-export.json"))), /IMPORT_INVALID.*not a finished `cairn export`/],
    ];
    for (const [folder, message] of cases) {
      const empty = fresh("empty");
      const refused = await importInto(empty, folder);
      expect(refused.code, folder).toBe(1);
      expect(refused.stderr, folder).toMatch(message);
      const left = new FsObjectStore(empty);
      for await (const entry of left.list("")) expect.fail(`${folder}: a refused import left ${entry.key}`);
      await left.close();
    }

    // A document already there with other contents: refused, named.
    const edited = bad("edited", (folder) => writeFileSync(notesFile(folder), readFileSync(notesFile(folder), "utf8").replace(/"body":"[^"]*"/, '"body":"not what is there"')));
    const conflict = await importInto(target, edited);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(/IMPORT_CONFLICT.*already exists with other contents/);
    expect(exportedLines(await exportOf(target))).toEqual(lines);
  });
});
