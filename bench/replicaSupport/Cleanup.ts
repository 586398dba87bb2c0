/**
 * What a benchmark must undo whatever happens (children to stop, temp dirs to remove):
 * closers run in reverse order, each whatever the others did, each at most once.
 */
export class Cleanup {
  private readonly steps: { readonly name: string; readonly run: () => unknown }[] = [];

  constructor(private readonly report: (message: string) => void) {}

  add(name: string, run: () => unknown): void {
    this.steps.push({ name, run });
  }

  /** Runs (and forgets) the steps added since `mark` only, newest first. */
  async runSince(mark: number): Promise<void> {
    for (const step of this.steps.splice(mark).reverse()) {
      try {
        await step.run();
      } catch (error) {
        this.report(`cleanup: ${step.name} failed: ${String(error)}`);
      }
    }
  }

  /** The number of steps so far, for `runSince`. */
  mark(): number {
    return this.steps.length;
  }

  run(): Promise<void> {
    return this.runSince(0);
  }
}
