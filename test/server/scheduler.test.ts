/**
 * Scenario: scheduled functions and crons on real nodes over a directory bucket (the app
 * in test/server/schedulerApp.ts), driven through the HTTP API.
 *
 * - A mutation schedules bumps; each runs exactly once (one run row per job, the counter
 *   equals the jobs), its job ends "success", and a live read of the job shows it.
 * - A mutation that schedules and then fails schedules nothing.
 * - A job's function that fails ends "failed" with its error, and is not run again.
 * - An action's job runs once and records its outcome; a failing one ends "failed".
 * - Cancel: a job cancelled before it is due never runs; cancelling a finished job
 *   changes nothing; an id of another table is refused.
 * - Bad input at scheduling time: an unknown function, a query, bad arguments, a negative
 *   or non-finite delay are refused and the mutation writes nothing; the system table
 *   cannot be written by app code; a client may not take a `_` client id.
 * - Restart: jobs due while no node ran are run by the next one, once each; crons keep one
 *   pending tick across restarts and tick on.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { App } from "../../src/functions/App.js";
import { cronJobs } from "../../src/functions/index.js";
import * as schedulerApp from "./schedulerApp.js";
import { startTestNode } from "./serverHarness.js";

const app = App.fromModule(schedulerApp, "scheduler test app");
const root = mkdtempSync(join(tmpdir(), "cairn-scheduler-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function call(url: string, kind: "query" | "mutation" | "action", path: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(`${url}api/${kind}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path, args, ...extra }) });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

async function value(url: string, kind: "query" | "mutation" | "action", path: string, args: Record<string, unknown>): Promise<unknown> {
  const answer = await call(url, kind, path, args);
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body["value"];
}

/** Waits (bounded, against a hang) until `check` stops throwing. */
function eventually(check: () => Promise<void>): Promise<void> {
  return vi.waitFor(check, { timeout: 20_000, interval: 25 });
}

interface JobView {
  readonly state: { readonly kind: string; readonly error?: string };
  readonly name: string;
  readonly completedTime?: number;
}

async function job(url: string, id: string): Promise<JobView | null> {
  return (await value(url, "query", "jobs:job", { id })) as JobView | null;
}

describe("scheduler", () => {
  it("runs scheduled mutations and actions once each, records their outcomes, cancels, and refuses bad jobs", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const started = await startTestNode({ app, log: (line) => lines.push(line) }, { directory: join(root, "basic") });
    const { url } = started.node;
    try {
      const ids = (await value(url, "mutation", "jobs:schedule", { name: "a", tag: "a", count: 20, delayMs: 0 })) as string[];
      expect(ids).toHaveLength(20);
      await eventually(async () => expect(await value(url, "query", "jobs:counter", { name: "a" })).toBe(20));
      const runs = (await value(url, "query", "jobs:runsOf", { prefix: "a:" })) as string[];
      expect(runs.sort()).toEqual(ids.map((_, i) => `mutation:a:${i}`).sort());
      for (const id of ids) expect((await job(url, id))?.state.kind).toBe("success");

      // Scheduled, then the mutation failed: no job, no run.
      const failed = await call(url, "mutation", "jobs:scheduleThenFail", { name: "never" });
      expect(failed.status).toBe(400);
      expect(await value(url, "query", "jobs:runsOf", { prefix: "never" })).toEqual([]);

      // A failing job ends failed once.
      const failing = (await value(url, "mutation", "jobs:scheduleFailing", { tag: "f1" })) as string;
      await eventually(async () => expect((await job(url, failing))?.state.kind).toBe("failed"));
      expect((await job(url, failing))?.state.error).toContain("failing on purpose (f1)");

      // Actions: once, outcome recorded.
      const acted = (await value(url, "mutation", "jobs:scheduleAction", { tag: "act1" })) as string;
      const actFails = (await value(url, "mutation", "jobs:scheduleAction", { tag: "act2", fail: true })) as string;
      await eventually(async () => expect((await job(url, acted))?.state.kind).toBe("success"));
      await eventually(async () => expect((await job(url, actFails))?.state.kind).toBe("failed"));
      // A thrown Error is the function's failure: the job names its request id, the log has the stack.
      expect((await job(url, actFails))?.state.error).toMatch(/^FUNCTION_FAILED: jobs:act failed; request id [0-9a-f]+/);
      expect(lines.some((line) => line.includes("function jobs:act failed") && line.includes("fails on purpose"))).toBe(true);
      expect(((await value(url, "query", "jobs:runsOf", { prefix: "act" })) as string[]).sort()).toEqual(["action:act1", "action:act2"]);

      // From an action.
      const fromAction = (await value(url, "action", "jobs:scheduleFromAction", { name: "b", tag: "b1" })) as string;
      await eventually(async () => expect((await job(url, fromAction))?.state.kind).toBe("success"));

      // Cancel before due: never runs.
      const later = (await value(url, "mutation", "jobs:schedule", { name: "c", tag: "c", count: 1, delayMs: 60_000 })) as string[];
      await value(url, "mutation", "jobs:cancel", { id: later[0]! });
      expect((await job(url, later[0]!))?.state.kind).toBe("canceled");
      // Cancelling a finished job changes nothing.
      await value(url, "mutation", "jobs:cancel", { id: ids[0]! });
      expect((await job(url, ids[0]!))?.state.kind).toBe("success");

      // Bad input at scheduling time: refused, nothing written.
      const bad = async (path: string, args: unknown, delayMs: unknown) => call(url, "mutation", "jobs:scheduleAny", { path, args, delayMs });
      const pendingBefore = await value(url, "query", "jobs:jobsIn", { state: "pending" });
      for (const [path, args, delayMs, code] of [
        ["jobs:nothing", {}, 0, "FUNCTION_NOT_FOUND"],
        ["jobs:counter", { name: "x" }, 0, "FUNCTION_NOT_FOUND"],
        ["jobs:bump", { name: 3, tag: "x" }, 0, "INVALID_ARGUMENT"],
        ["jobs:bump", { name: "x", tag: "x", extra: true }, 0, "INVALID_ARGUMENT"],
        ["jobs:bump", { name: "x", tag: "x" }, -5, "INVALID_ARGUMENT"],
        ["jobs:bump", { name: "x", tag: "x" }, "soon", "INVALID_ARGUMENT"],
      ] as const) {
        const refused = await bad(path, args, delayMs);
        expect(refused.status, `${path} ${JSON.stringify(args)} ${String(delayMs)}`).toBe(code === "FUNCTION_NOT_FOUND" ? 404 : 400);
        expect((refused.body["error"] as { code: string }).code).toBe(code);
      }
      expect(await value(url, "query", "jobs:jobsIn", { state: "pending" })).toBe(pendingBefore);
      const tamper = await call(url, "mutation", "jobs:tamper", { id: ids[1]! });
      expect((tamper.body["error"] as { code: string }).code).toBe("INVALID_ARGUMENT");
      expect((await job(url, ids[1]!))?.state.kind).toBe("success");
      const cancelOther = await call(url, "mutation", "jobs:cancel", { id: "not-an-id" });
      expect(cancelOther.status).toBe(400);
      const reserved = await call(url, "mutation", "jobs:bump", { name: "x", tag: "x" }, { clientId: `_job:${later[0]}`, seq: 0 });
      expect(reserved.status).not.toBe(200);
    } finally {
      await started.close();
    }
    expect(lines.filter((line) => line.includes("scheduler:"))).toEqual([]);
  });

  it("runs jobs that came due while no node ran, once each, and keeps one pending tick per cron across restarts", { timeout: 90_000 }, async () => {
    const directory = join(root, "restart");
    const lines: string[] = [];
    let started = await startTestNode({ app, log: (line) => lines.push(line) }, { directory, keepDirectory: true });
    let url = started.node.url;
    let ids: string[];
    try {
      // The crons are installed once: one pending tick each.
      await eventually(async () => expect(await value(url, "query", "jobs:ticks", { cron: "tick", state: "pending" })).toHaveLength(1));
      expect(await value(url, "query", "jobs:ticks", { cron: "minutely", state: "pending" })).toHaveLength(1);
      await eventually(async () => expect(await value(url, "query", "jobs:counter", { name: "ticks" })).toBeGreaterThanOrEqual(2));
      ids = (await value(url, "mutation", "jobs:schedule", { name: "r", tag: "r", count: 50, delayMs: 1_500 })) as string[];
    } finally {
      await started.close();
    }
    // Due while nothing runs.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    started = await startTestNode({ app, log: (line) => lines.push(line) }, { directory, keepDirectory: true });
    url = started.node.url;
    try {
      await eventually(async () => expect(await value(url, "query", "jobs:counter", { name: "r" })).toBe(50));
      expect(((await value(url, "query", "jobs:runsOf", { prefix: "r:" })) as string[]).sort()).toEqual(ids.map((_, i) => `mutation:r:${i}`).sort());
      // Still one pending tick per cron (the restart kept them), and every finished tick ran once.
      const ticksBefore = (await value(url, "query", "jobs:counter", { name: "ticks" })) as number;
      await eventually(async () => expect(await value(url, "query", "jobs:counter", { name: "ticks" })).toBeGreaterThan(ticksBefore));
      expect(await value(url, "query", "jobs:ticks", { cron: "tick", state: "pending" })).toHaveLength(1);
      expect(await value(url, "query", "jobs:ticks", { cron: "minutely", state: "pending" })).toHaveLength(1);
      const done = (await value(url, "query", "jobs:ticks", { cron: "tick", state: "success" })) as [number, number][];
      const runs = ((await value(url, "query", "jobs:runsOf", { prefix: "tick" })) as string[]).length;
      const counted = (await value(url, "query", "jobs:counter", { name: "ticks" })) as number;
      // A tick may have committed between the reads: never fewer runs than finished ticks, never more than one more.
      expect(runs).toBe(counted);
      expect(counted - done.length).toBeGreaterThanOrEqual(0);
      expect(counted - done.length).toBeLessThanOrEqual(1);
      expect(new Set(done.map(([due]) => due)).size).toBe(done.length);
    } finally {
      await started.close();
    }
    // The app drops a cron and changes the other: the dropped cron's tick is cancelled, the changed one replaced.
    const changed = App.fromModule({ ...schedulerApp, crons: cronJobs().interval("tick", { seconds: 3_600 }, "jobs:bump", { name: "ticks", tag: "tick" }) }, "changed crons");
    started = await startTestNode({ app: changed, log: (line) => lines.push(line) }, { directory, keepDirectory: true });
    url = started.node.url;
    try {
      await eventually(async () => expect(await value(url, "query", "jobs:ticks", { cron: "minutely", state: "pending" })).toHaveLength(0));
      const pending = (await value(url, "query", "jobs:ticks", { cron: "tick", state: "pending" })) as [number, null][];
      expect(pending).toHaveLength(1);
      expect(pending[0]![0]).toBeGreaterThan(Date.now() + 3_000_000);
      expect(((await value(url, "query", "jobs:ticks", { cron: "minutely", state: "canceled" })) as unknown[]).length).toBeGreaterThanOrEqual(1);
    } finally {
      await started.close();
    }
    expect(lines.filter((line) => line.includes("scheduler:") || line.includes("is not installed"))).toEqual([]);
  });

  it("settles every cancel racing its job's run one way: cancelled and never run, or run once and not cancelled", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const started = await startTestNode({ app, log: (line) => lines.push(line) }, { directory: join(root, "cancel-race") });
    const { url } = started.node;
    try {
      // 8 batches due 500–1,200 ms after they are scheduled; cancels go out in groups of 20
      // every 50 ms from 700 ms on, in a shuffled order: some land before their job's run, some after.
      const scheduledAtMs = Date.now();
      const ids: string[] = [];
      for (let batch = 0; batch < 8; batch++) ids.push(...((await value(url, "mutation", "jobs:schedule", { name: "race", tag: `race${batch}`, count: 25, delayMs: 500 + batch * 100 })) as string[]));
      const tagOf = new Map(ids.map((id, index) => [id, `race${Math.floor(index / 25)}:${index % 25}`]));
      const shuffled = [...ids].sort((a, b) => (a.slice(-6) < b.slice(-6) ? -1 : 1));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, scheduledAtMs + 700 - Date.now())));
      const cancels: Promise<unknown>[] = [];
      for (let group = 0; group < shuffled.length; group += 20) {
        cancels.push(...shuffled.slice(group, group + 20).map((id) => call(url, "mutation", "jobs:cancel", { id })));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await Promise.all(cancels);
      // Pending at the end: the two crons' next ticks (a tick's end and its successor are one commit), nothing else.
      await eventually(async () => expect(await value(url, "query", "jobs:jobsIn", { state: "pending" }), lines.join("\n")).toBe(2));
      const runs = new Set((await value(url, "query", "jobs:runsOf", { prefix: "race" })) as string[]);
      let canceled = 0;
      for (const id of ids) {
        const state = (await job(url, id))!.state.kind;
        const ran = runs.has(`mutation:${tagOf.get(id)}`);
        expect(state === "canceled" ? !ran : state === "success" && ran, `${id} ${state} ran=${ran}`).toBe(true);
        if (state === "canceled") canceled++;
      }
      expect(await value(url, "query", "jobs:counter", { name: "race" })).toBe(ids.length - canceled);
      console.log(`cancel race: ${canceled} of ${ids.length} cancelled before they ran`);
    } finally {
      await started.close();
    }
  });

  it("runs a job on the shard its function runs on: the job lives where it was scheduled, its mutation commits once wherever it lands", { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const started = await startTestNode({ app, numShards: 4, log: (line) => lines.push(line) }, { directory: join(root, "sharded") });
    const { url } = started.node;
    try {
      const owners = Array.from({ length: 24 }, (_, index) => `owner${index}`);
      const ids: string[] = [];
      for (const from of ["alice", "bob", "carol"]) ids.push(...((await value(url, "mutation", "jobs:scheduleNotes", { from, owners, text: from })) as string[]));
      await eventually(async () => {
        for (const id of ids) expect((await job(url, id))?.state.kind, lines.join("\n")).toBe("success");
      });
      // Every owner has exactly one note from each sender, on its own shard.
      for (const owner of owners) expect(((await value(url, "query", "jobs:notesOf", { owner })) as string[]).sort()).toEqual(["alice", "bob", "carol"]);
    } finally {
      await started.close();
    }
    // The crons live on shard 0 and were installed there; no runner logged a failure.
    expect(lines.filter((line) => line.includes("scheduler:"))).toEqual([]);
  });
});
