/**
 * A node's shutdown, in the reverse order of assembly: each part registers how it stops
 * right after it started, so whatever was opened is closed again — on a graceful stop and
 * when a later step of the start fails — and nothing is stopped before what depends on it.
 *
 * Invariants:
 * - `run` runs every step once, last registered first, even when one fails (its error is
 *   logged, naming the step); a second `run` waits for the first.
 */
export class OrderedShutdown {
  private readonly steps: { readonly name: string; readonly stop: () => Promise<void> | void }[] = [];
  private running: Promise<void> | null = null;

  constructor(private readonly log: (line: string) => void) {}

  /** Registers how to stop a part that just started (`name` says which, in logs). */
  add(name: string, stop: () => Promise<void> | void): void {
    this.steps.push({ name, stop });
  }

  run(): Promise<void> {
    return (this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.stop();
        } catch (error) {
          this.log(`while stopping (${step.name}): ${(error as Error).message}`);
        }
      }
    })());
  }
}
