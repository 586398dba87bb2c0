/** A promise a test opens by hand, to hold a bucket call at a chosen point. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;

  constructor() {
    this.promise = new Promise<void>((resolve) => {
      this.open = resolve;
    });
  }
}

/**
 * Lets pending work run until `predicate` holds (checked between event-loop turns).
 * Bounded by turns, not time: tests never assert timings.
 */
export async function eventually(predicate: () => boolean, turnsMax = 10_000): Promise<void> {
  for (let turn = 0; turn < turnsMax; turn++) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, turn < 100 ? 0 : 5));
  }
  throw new Error("condition never became true");
}
