import { mib, type Row } from "../kit/report.js";

/**
 * The peak RSS of the process that hosted a phase's shard writer — this benchmark's own
 * in phases 2 to 5 (phase 4's bootstrap readers report theirs apart) — as the kernel
 * keeps it (VmHWM, reset as the phase starts).
 */
export interface WriterPeakRss {
  /** VmHWM over the phase, bytes (null where /proc has none). */
  readonly vmHwmBytes: number | null;
}

/** The table's row of a phase's WriterPeakRss. */
export function writerPeakRssRow({ vmHwmBytes }: WriterPeakRss): Row {
  return ["peak RSS of the writer's process (kernel VmHWM over the phase), MiB", vmHwmBytes === null ? "-" : mib(vmHwmBytes), ""];
}
