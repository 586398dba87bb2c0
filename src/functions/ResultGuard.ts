import { DiffableResult, type DiffableCapture } from "./DiffableRead.js";

/**
 * How a subscription run learns that its result is exactly one read's result, unchanged
 * whatever the data: the proof a diff needs (DiffableRead.ts). A run that describes its
 * reads hands the handler each read's result behind a Proxy that notes any look at it —
 * a property, its length, iteration, a write. The result is diffable when the run made
 * exactly one read, the handler returned that read's proxy itself, and nothing looked
 * inside it before it was returned.
 *
 * Why that is a proof: with its arguments and identity fixed (they are, per
 * subscription) and neither the clock nor chance consulted (`impure`), a handler's
 * return value can depend on the data only through what it read; it read one thing and
 * never looked at it, so whatever it computed did not depend on it, and it returned that
 * thing itself. The one look no trap sees is whether the value is null (`doc === null`),
 * so a null result is never wrapped, and a diff that would make a document read null (or
 * not) re-runs the query instead (DiffableRead). Objects a proxy cannot stand in for
 * (structuredClone refuses one) make the run fail: FunctionRuntime then runs the query
 * again unguarded.
 *
 * Invariants: a proxy notes every look from the handler, also after it returned (a
 * `.then` callback it chained); the runtime reads the results through `unwrap`, never
 * through a proxy, so its own reads (the return validator, the encoding) note nothing.
 */
export class ResultGuard {
  private readonly captured = new Map<object, { readonly target: object; readonly capture: DiffableCapture }>();
  private looked = false;
  /** Reads the run made (every document read and index scan, diffable or not). */
  reads = 0;

  /** The handler read the clock or a random number (ctx.now, ctx.random): its result may differ at the next run, data unchanged. */
  impure(): void {
    this.looked = true;
  }

  /** The handler's view of a read's result: `target` behind a noting proxy. */
  wrap<T extends object>(target: T, capture: DiffableCapture): T {
    const note = () => {
      this.looked = true;
    };
    const proxy = new Proxy(target, {
      get(object, property, receiver) {
        // Resolving a promise with the result asks for `then` (an await, an async return): no look at the data.
        if (property === "then" && !Object.hasOwn(object, "then")) return undefined;
        note();
        return Reflect.get(object, property, receiver);
      },
      set(object, property, value, receiver) {
        note();
        return Reflect.set(object, property, value, receiver);
      },
      has(object, property) {
        note();
        return Reflect.has(object, property);
      },
      deleteProperty(object, property) {
        note();
        return Reflect.deleteProperty(object, property);
      },
      defineProperty(object, property, descriptor) {
        note();
        return Reflect.defineProperty(object, property, descriptor);
      },
      ownKeys(object) {
        note();
        return Reflect.ownKeys(object);
      },
      getOwnPropertyDescriptor(object, property) {
        note();
        return Reflect.getOwnPropertyDescriptor(object, property);
      },
      setPrototypeOf(object, prototype) {
        note();
        return Reflect.setPrototypeOf(object, prototype);
      },
      preventExtensions(object) {
        note();
        return Reflect.preventExtensions(object);
      },
    });
    this.captured.set(proxy, { target, capture });
    return proxy;
  }

  /** The value with a returned proxy replaced by what it wraps (a proxy nested deeper is read through, noting). */
  unwrap(value: unknown): unknown {
    if (typeof value !== "object" || value === null) return value;
    return this.captured.get(value)?.target ?? value;
  }

  /** The diffable result the handler returned (set by `settle`; null: it returned anything else). */
  result: DiffableResult | null = null;
  /** What `settle` returned: the value the runtime goes on with. */
  private settledValue: unknown = undefined;

  /**
   * The handler returned `returned`: records whether it is provably one read's result
   * unchanged (see the class comment), its rows encoded now, before anything may change
   * them; returns it unwrapped. Call once the handler settled, before anything else reads
   * the value.
   */
  settle(returned: unknown): unknown {
    const entry = typeof returned === "object" && returned !== null ? this.captured.get(returned) : undefined;
    if (entry !== undefined && !this.looked && this.reads === 1) this.result = DiffableResult.captured(entry.capture);
    this.settledValue = this.unwrap(returned);
    return this.settledValue;
  }

  /** The diffable result, if the run's final value is still the one `settle` returned (a return validator may replace it). */
  resultFor(value: unknown): DiffableResult | null {
    return this.result !== null && value === this.settledValue ? this.result : null;
  }
}
