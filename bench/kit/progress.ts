import { performance } from "node:perf_hooks";

/**
 * What a benchmark says while a long phase runs. Its table and JSON line own stdout (a
 * reader may pipe them), so progress goes to stderr, one line a call.
 */
export type Progress = (message: string) => void;

/** Prints each line to stderr after `prefix` ("[bench:fleet] " to tell processes apart, "  " under a phase's own line). */
export function progressPrinter(prefix = ""): Progress {
  return (message) => process.stderr.write(`${prefix}${message}\n`);
}

/** Passes a line on only once `intervalMs` has passed since the last one (or the start): a long loop's "so far" every few seconds. */
export function throttled(progress: Progress, intervalMs: number): Progress {
  let lastMs = performance.now();
  return (message) => {
    if (performance.now() - lastMs <= intervalMs) return;
    lastMs = performance.now();
    progress(message);
  };
}
