import { performance } from "node:perf_hooks";

/** A line a child printed, which stream it came on, and when it arrived (wall clock, ms). */
export interface OutputLine {
  readonly atWallMs: number;
  readonly stream: "stdout" | "stderr";
  readonly text: string;
}

/**
 * The last `linesMax` lines a child printed, kept so that a benchmark can search them for
 * events it has no API for (a node's "this node writes it now", a writer's snapshots) and
 * show them when the child fails. Empty lines are dropped; older lines fall off the front.
 * A mark is a position in everything ever kept, so `since(mark)` stays right as lines drop.
 */
export class OutputLines {
  private readonly lines: OutputLine[] = [];
  private dropped = 0;

  constructor(private readonly linesMax: number) {}

  add(stream: OutputLine["stream"], text: string): void {
    if (text.length === 0 || this.linesMax === 0) return;
    this.lines.push({ atWallMs: performance.timeOrigin + performance.now(), stream, text });
    if (this.lines.length > this.linesMax) {
      this.lines.shift();
      this.dropped++;
    }
  }

  /** A position in the output: `since(mark)` returns what was printed after it. */
  mark(): number {
    return this.dropped + this.lines.length;
  }

  since(mark: number): readonly OutputLine[] {
    return this.lines.slice(Math.max(0, mark - this.dropped));
  }

  /** The last `count` lines' text, one per line. */
  last(count: number): string {
    return this.lines
      .slice(-count)
      .map((line) => line.text)
      .join("\n");
  }

  /** When a line matching `pattern` first arrived at or after `sinceWallMs`, or null. */
  firstAt(pattern: RegExp, sinceWallMs: number): number | null {
    return this.lines.find((line) => line.atWallMs >= sinceWallMs && pattern.test(line.text))?.atWallMs ?? null;
  }
}
