/**
 * Scenario: `cairn retention`, `cairn restore` and `cairn export` as a user runs them, in real child
 * processes over directory buckets: a restore at an ISO time and at a ts reproduces the
 * state of that moment in a new deployment that `cairn verify` passes; SIGKILLed midway,
 * the target is refused by nodes and a re-run finishes it; an export of the present and
 * of the ISO moment holds those states; bad moments, durations and
 * targets are refused with a clear message and nothing written.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { globalsObject } from "../../src/manifest/Globals.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { runCairn } from "../support/runCairn.js";
import { notesIn } from "./historyNotes.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-restore-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const app = App.fromModule(historyApp, "history test app");
let directories = 0;

describe("cairn retention and cairn restore", () => {
  it("restores the state at an ISO time and at a ts, survives a SIGKILL midway, and refuses bad input", { timeout: 120_000 }, async () => {
    const bucket = join(root, "bucket");
    // A stopped 2-shard deployment: 300 notes, then (after a recorded moment) edits and deletes.
    const store = new FsObjectStore(bucket);
    const node = await ShardedStore.open({ store, localDirectory: join(root, "seed"), nodeId: "seed", numShards: 2 });
    await node.acquireAll();
    const runtime = await shardedRuntime(node, store, app, systemRandom);
    const ids: string[] = [];
    for (let n = 0; n < 300; n++) ids.push((await runtime.runMutation("notes:add", { channel: `c${n % 9}`, n, body: `note ${n}` })).value as string);
    const asWritten = ((await runtime.runQuery("notes:all", {})).value as { channel: string; n: number; body: string }[]).map((note) => `${note.channel}/${note.n}: ${note.body}`).sort();
    expect(asWritten).toHaveLength(300);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const isoMoment = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    let lastTs = 0;
    for (let n = 0; n < 300; n += 3) {
      const channel = `c${n % 9}`;
      lastTs = (await runtime.runMutation(n % 2 === 0 ? "notes:remove" : "notes:edit", { id: ids[n]!, channel, ...(n % 2 === 0 ? {} : { body: "edited" }) })).ts;
    }
    await node.close();
    await store.close();

    // Retention: 7 days for a new deployment; changed, and bad durations refused.
    expect((await runCairn(["retention", "--store", bucket])).stdout).toMatch(/retention of deployment [0-9a-f]{32}: 7d/);
    const set = await runCairn(["retention", "--store", bucket, "--set", "36h"]);
    expect(set.stdout).toMatch(/7d → 36h/);
    for (const bad of ["7 days", "-1d", "1.5h", "d"]) {
      const refused = await runCairn(["retention", "--store", bucket, "--set", bad]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/expected 0 or a whole number with a unit/);
    }
    const globals = new FsObjectStore(bucket);
    expect((await globalsObject(globals, systemRandom).read())!.value.retentionMs).toBe(36 * 3_600_000);
    await globals.close();

    // At the ISO moment: the 300 notes as first written.
    const atIso = join(root, "at-iso");
    const restored = await runCairn(["restore", "--store", bucket, "--at", isoMoment, "--to", atIso]);
    expect(restored.stderr).not.toMatch(/cairn: \[/);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/restored deployment [0-9a-f]{32} as it was at .* new deployment [0-9a-f]{32}, 2 shard\(s\), 300 document\(s\)/);
    expect(await notesIn(atIso, root)).toEqual(asWritten);
    expect((await runCairn(["verify", "--store", atIso])).code).toBe(0);

    // Killed midway (once it reports progress on a shard): nodes refuse the target; a re-run at the same ts finishes it.
    const atTs = join(root, "at-ts");
    const killed = await runCairn(["restore", "--store", bucket, "--at", String(lastTs), "--to", atTs], { stream: "stderr", pattern: /shard 0\/2/, signal: "SIGKILL" });
    expect(killed.signal).toBe("SIGKILL");
    const early = await runCairn(["inspect", "--store", atTs]);
    expect(early.code).toBe(1);
    const refusedServe = await runCairn(["gc", "--store", atTs, "--local", join(root, "gc-local")]);
    expect(refusedServe.stderr).toMatch(/RESTORE_UNFINISHED|globals missing/);
    const rerun = await runCairn(["restore", "--store", bucket, "--at", String(lastTs), "--to", atTs]);
    expect(rerun.stderr).not.toMatch(/cairn: \[/);
    expect(rerun.code).toBe(0);
    const after = await notesIn(atTs, root);
    expect(after).toHaveLength(250);
    expect(after.filter((line) => line.endsWith(": edited"))).toHaveLength(50);
    expect(await notesIn(bucket, root)).toEqual(after);

    // Export: the present by default, the ISO moment's 300 notes with --at; a folder that exists is refused.
    const present = join(root, "export-present");
    const exported = await runCairn(["export", "--store", bucket, "--to", present]);
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/exported deployment [0-9a-f]{32} as it was at .*: 250 document\(s\)\n {2}notes: 250 document\(s\)/);
    expect(readFileSync(join(present, "notes", "documents.jsonl"), "utf8").trimEnd().split("\n")).toHaveLength(250);
    const past = join(root, "export-past");
    expect((await runCairn(["export", "--store", bucket, "--at", isoMoment, "--to", past])).code).toBe(0);
    const pastNotes = readFileSync(join(past, "notes", "documents.jsonl"), "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as { channel: string; n: number; body: string });
    expect(pastNotes.map((note) => `${note.channel}/${note.n}: ${note.body}`).sort()).toEqual(asWritten);
    const again = await runCairn(["export", "--store", bucket, "--to", past]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);

    // In place: the ISO moment becomes the present; a restore to the moment before it undoes it.
    const inPlace = await runCairn(["restore", "--store", bucket, "--at", isoMoment, "--in-place"]);
    expect(inPlace.stderr).not.toMatch(/cairn: \[/);
    expect(inPlace.stdout).toMatch(/restored deployment [0-9a-f]{32} in place to .*: 300 document\(s\) on 2 shard\(s\), now layout generation 1\n.*kept until/);
    expect(await notesIn(bucket, root)).toEqual(asWritten);
    const undo = await runCairn(["restore", "--store", bucket, "--at", String(lastTs), "--in-place"]);
    expect(undo.code).toBe(0);
    expect(await notesIn(bucket, root)).toEqual(after);
    for (const where of [[], ["--in-place", "--to", join(root, "both")]]) {
      const refused = await runCairn(["restore", "--store", bucket, "--at", String(lastTs), ...where]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/--to <store URL> \(a new deployment\) or --in-place/);
    }

    // Bad input: a moment that is no moment, one in the future, a target that is not empty.
    for (const [at, message] of [
      ["yesterday", /expected an ISO 8601 date-time with a time zone/],
      ["2026-12-06T18:00:00", /expected an ISO 8601 date-time with a time zone/],
      ["2026-02-30T18:00:00Z", /2026-02-30T18:00:00Z is not a valid date-time/],
      ["2020-01-01T00:00:00Z", /RESTORE_OUT_OF_RANGE.*before deployment [0-9a-f]{32} was created/],
      [new Date(Date.now() + 3_600_000).toISOString(), /RESTORE_OUT_OF_RANGE.*future/],
    ] as const) {
      const target = join(root, `bad-${directories++}`);
      const refused = await runCairn(["restore", "--store", bucket, "--at", at, "--to", target]);
      expect(refused.code, at).toBe(1);
      expect(refused.stderr, at).toMatch(message);
      expect(existsSync(join(target, "restoring")), at).toBe(false);
    }
    const occupied = await runCairn(["restore", "--store", bucket, "--at", String(lastTs), "--to", atIso]);
    expect(occupied.code).toBe(1);
    expect(occupied.stderr).toMatch(/RESTORE_TARGET_NOT_EMPTY/);
  });
});
