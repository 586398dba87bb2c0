/**
 * Scenario: nothing in src/ reads the system's time or randomness except the injected
 * Clock and Random (STYLE.md practice 4: the simulation replays a seed on a virtual
 * clock only if nothing else does), and the check itself catches each way of reading
 * them in a made-up file — while an injected clock's or timer object's own methods pass.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { sourceFiles, TIME_AND_RANDOMNESS_SOURCES, timeAndRandomnessLeaks } from "./support/houseRules.js";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "src");

describe("time and randomness only through the injected Clock and Random", () => {
  it("src/ reads neither outside base/clock.ts and base/random.ts (and the client's own injected defaults)", () => {
    const leaks = sourceFiles(SRC)
      .filter((file) => !TIME_AND_RANDOMNESS_SOURCES.has(file))
      .flatMap((file) => timeAndRandomnessLeaks(file, readFileSync(join(SRC, file), "utf8")));
    expect(leaks).toEqual([]);
  });

  it("the check names the file, the line and each read of the clock", () => {
    const text = [
      "const a = Date.now();",
      "const b = new Date();",
      "const c = performance.now();",
      "const d = globalThis.performance.now();",
      "const t = setTimeout(() => undefined, 5);",
      "const i = setInterval(tick, 5);",
      "globalThis.setTimeout(tick, 1);",
      "const start = process.hrtime.bigint();",
      'import { setTimeout as sleep } from "node:timers/promises";',
      "const stamp = Date();",
    ].join("\n");
    const CLOCK = "take it from the injected Clock (src/base/clock.ts: nowMs, monotonicMs, sleep, setTimer, every)";
    expect(timeAndRandomnessLeaks("sync/Leaky.ts", text)).toEqual([
      `src/sync/Leaky.ts:1: Date.now — ${CLOCK}`,
      `src/sync/Leaky.ts:2: new Date() (the current time) — ${CLOCK}`,
      `src/sync/Leaky.ts:3: performance.now — ${CLOCK}`,
      `src/sync/Leaky.ts:4: performance.now — ${CLOCK}`,
      `src/sync/Leaky.ts:5: setTimeout — ${CLOCK}`,
      `src/sync/Leaky.ts:6: setInterval — ${CLOCK}`,
      `src/sync/Leaky.ts:7: globalThis.setTimeout — ${CLOCK}`,
      `src/sync/Leaky.ts:8: process.hrtime — ${CLOCK}`,
      `src/sync/Leaky.ts:9: import from "node:timers/promises" — ${CLOCK}`,
      `src/sync/Leaky.ts:10: Date() (the current time) — ${CLOCK}`,
    ]);
  });

  it("the check names each draw of randomness", () => {
    const text = [
      'import { createHash, randomBytes } from "node:crypto";',
      "const a = Math.random();",
      "const id = crypto.randomUUID();",
      "const b = globalThis.crypto.getRandomValues(new Uint8Array(4));",
      "const c = randomBytes(6);",
    ].join("\n");
    const RANDOM = "draw it from the injected Random (src/base/random.ts: systemRandom, randomHex)";
    expect(timeAndRandomnessLeaks("cli/leaky.ts", text)).toEqual([
      `src/cli/leaky.ts:1: randomBytes from "node:crypto" — ${RANDOM}`,
      `src/cli/leaky.ts:2: Math.random — ${RANDOM}`,
      `src/cli/leaky.ts:3: crypto.randomUUID — ${RANDOM}`,
      `src/cli/leaky.ts:4: globalThis.crypto.getRandomValues — ${RANDOM}`,
    ]);
  });

  it("passes injected clocks and timers, dated values, and words in comments and strings", () => {
    const text = [
      "// Date.now() and setTimeout are banned here",
      'const note = "Math.random is not used";',
      "const at = new Date(clock.nowMs()).toISOString();",
      "this.timers.setTimeout(() => this.retry(), delayMs);",
      "const timer = clock.setTimer(5, tick);",
      "let handle: ReturnType<typeof setTimeout> | null = null;",
      "interface Timers { setTimeout(callback: () => void, ms: number): unknown }",
      "const options = { setTimeout: 1 };",
      'import { createHash } from "node:crypto";',
    ].join("\n");
    expect(timeAndRandomnessLeaks("client/Fine.ts", text)).toEqual([]);
  });
});
