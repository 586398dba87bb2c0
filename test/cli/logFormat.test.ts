/**
 * Scenario: `cairn serve --log-format json` as a real process, serving a tiny app whose
 * query prints with console.log and console.warn. Every line it writes on stdout is one
 * JSON object: node lines as {time, level: "info", msg}, and the query, called over HTTP,
 * as {time, type: "function", …its log entry} holding the lines it printed, which are not
 * echoed separately. A bad --log-format is refused before anything starts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { functionLogLine, nodeLogging } from "../../src/cli/logFormat.js";
import { runCairn } from "../support/runCairn.js";
import { spawnCairnServe } from "../support/spawnCairnServe.js";

const root = mkdtempSync(join(tmpdir(), "cairn-log-format-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const FUNCTIONS = JSON.stringify(join(process.cwd(), "src", "functions", "index.js"));
const APP = `
  import { defineSchema, defineTable, query, v } from ${FUNCTIONS};
  export const schema = defineSchema({ notes: defineTable({ text: v.string() }) });
  export const functions = {
    notes: {
      hello: query({
        args: { who: v.string() },
        handler: async (_ctx, { who }) => {
          console.log("hello from the log test,", who, { n: 1 });
          console.warn("careful");
          return 42;
        },
      }),
    },
  };
`;

/** Everything `child` prints on stdout from now on, and a wait for a line that passes `test`. */
function stdoutOf(child: ChildProcess) {
  let text = "";
  const waiters: (() => void)[] = [];
  child.stdout!.on("data", (chunk: Buffer) => {
    text += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    get text() {
      return text;
    },
    closed,
    async lineWhere(test: (line: string) => boolean): Promise<string> {
      for (;;) {
        const found = text.split("\n").find(test);
        if (found !== undefined) return found;
        if (child.exitCode !== null) throw new Error(`cairn serve exited without such a line:\n${text}`);
        await new Promise<void>((wake) => waiters.push(wake));
      }
    },
  };
}

describe("cairn serve --log-format json", () => {
  it("writes node lines and each function call (with what it printed) as JSON lines on stdout", async () => {
    const app = join(root, "app.ts");
    writeFileSync(app, APP);
    const served = await spawnCairnServe(["--log-format", "json", "--port", "0", "--store", join(root, "bucket"), "--local", join(root, "local"), "--app", app]);
    const stdout = stdoutOf(served.child);
    try {
      const answer = await fetch(`${served.url}api/query`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "notes:hello", args: { who: "ada" } }) });
      expect(answer.status).toBe(200);
      const line = await stdout.lineWhere((text) => text.includes('"type":"function"'));
      const entry = JSON.parse(line) as Record<string, unknown>;
      expect(entry).toMatchObject({ type: "function", path: "notes:hello", kind: "query", outcome: "ok", level: "warn" });
      expect(entry["time"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(entry["requestId"]).toMatch(/^[0-9a-f]{16}$/);
      expect(entry["durationMs"]).toEqual(expect.any(Number));
      expect(entry["lines"]).toEqual([
        { level: "log", text: "hello from the log test, ada { n: 1 }", time: expect.any(Number) },
        { level: "warn", text: "careful", time: expect.any(Number) },
      ]);
    } finally {
      served.child.kill("SIGINT");
      await stdout.closed;
    }
    // (Up to its announcement stdout and stderr come mixed: no text-format line among them.)
    expect(served.output).not.toMatch(/^cairn: /m);
    const lines = stdout.text.split("\n").filter((line) => line !== "");
    // Every line parses: node lines are {time, level, msg}; console lines were not echoed on their own.
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const nodeLines = parsed.filter((line) => line["type"] === undefined);
    expect(nodeLines.every((line) => line["level"] === "info" && typeof line["msg"] === "string" && typeof line["time"] === "string")).toBe(true);
    expect(served.output).toMatch(/^\{"time":"[^"]+","level":"info","msg":"node \S+ is the writer; serving at http/m);
    expect(nodeLines.at(-1)!["msg"]).toBe("stopped");
    expect(stdout.text).not.toContain("[notes:hello");
  });

  it("refuses a format it does not know", async () => {
    const run = await runCairn(["serve", "--log-format", "xml", "--port", "0", "--store", join(root, "bucket2"), "--local", join(root, "local2")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/--log-format.*xml.*choices.*text, json/s);
  });
});

describe("nodeLogging", () => {
  it("text writes `cairn: ` lines and echoes function output; json writes one object a line, the entry's time as ISO", () => {
    const clock = new ManualClock(Date.UTC(2025, 0, 2, 3, 4, 5, 6));
    const written: string[] = [];
    const text = nodeLogging("text", clock, (chunk) => written.push(chunk));
    text.log("hello");
    expect(text.echoFunctionConsole).toBe(true);
    expect(text.onFunctionLog).toBeUndefined();
    const json = nodeLogging("json", clock, (chunk) => written.push(chunk));
    json.log('a "quoted"\nline');
    const entry = { time: Date.UTC(2025, 0, 2, 3, 4, 6), requestId: "ab", path: "a:b", kind: "query", level: "info", outcome: "ok", durationMs: 3, lines: [] } as const;
    json.onFunctionLog!({ ...entry, id: 7 } as never);
    expect(json.echoFunctionConsole).toBe(false);
    expect(written).toEqual([
      "cairn: hello\n",
      `{"time":"2025-01-02T03:04:05.006Z","level":"info","msg":"a \\"quoted\\"\\nline"}\n`,
      `{"time":"2025-01-02T03:04:06.000Z","type":"function","requestId":"ab","path":"a:b","kind":"query","level":"info","outcome":"ok","durationMs":3,"lines":[],"id":7}\n`,
    ]);
    expect(functionLogLine(entry)).not.toContain("\n");
  });
});
