/**
 * What a benchmark must undo whatever happens (children to stop, temp dirs to remove):
 * closers run in reverse order, each whatever the others did, each at most once. Runs
 * are serialized: a run asked for while one is going (a signal handler's and the main
 * path's `finally`) resolves only after both are done, so no caller exits mid-way.
 */
export class Cleanup {
  private readonly steps: { readonly name: string; readonly run: () => unknown }[] = [];
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly report: (message: string) => void) {}

  add(name: string, run: () => unknown): void {
    this.steps.push({ name, run });
  }

  /** Runs (and forgets) the steps added since `mark` only, newest first. */
  runSince(mark: number): Promise<void> {
    this.running = this.running.then(() => this.runSteps(mark));
    return this.running;
  }

  /** The number of steps so far, for `runSince`. */
  mark(): number {
    return this.steps.length;
  }

  run(): Promise<void> {
    return this.runSince(0);
  }

  private async runSteps(mark: number): Promise<void> {
    for (const step of this.steps.splice(mark).reverse()) {
      try {
        await step.run();
      } catch (error) {
        this.report(`cleanup: ${step.name} failed: ${String(error)}`);
      }
    }
  }
}

/**
 * Ctrl-C or SIGTERM: runs `cleanup` (stopping every child) and exits 130. Returns whether
 * a signal came, so the main path can tell an interruption from a failure.
 */
export function stopOnSignal(cleanup: Cleanup, progress: (message: string) => void): { readonly interrupted: () => boolean } {
  let interrupted = false;
  const stop = (signal: NodeJS.Signals) => {
    interrupted = true;
    progress(`${signal}: stopping every child…`);
    void cleanup.run().finally(() => process.exit(130));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return { interrupted: () => interrupted };
}
