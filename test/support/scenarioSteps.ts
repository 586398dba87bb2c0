/**
 * How a long multi-process scenario reports its way: `step` logs how far it got (a run
 * that fails, or hangs on a slow machine, shows where), `until` waits for a predicate —
 * polling, bounded against a hang, asking again when a frozen or restarting node does not
 * answer — and logs when it held. Tests never assert timings: the times are for reading.
 */
export function scenarioSteps(label: string, pollMs: number): {
  step(what: string): void;
  until(what: string, predicate: () => Promise<boolean> | boolean, timeoutMs?: number): Promise<void>;
} {
  const startedMs = Date.now();
  const step = (what: string) => console.log(`${label}: ${what} (${Date.now() - startedMs} ms after the file started)`);
  const until = async (what: string, predicate: () => Promise<boolean> | boolean, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if (await predicate()) {
          step(what);
          return;
        }
      } catch {
        // A node that is frozen, being fenced or restarting does not answer: ask again.
      }
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  };
  return { step, until };
}
