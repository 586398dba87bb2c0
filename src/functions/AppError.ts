import { CairnError } from "../base/index.js";
import type { Value } from "../model/index.js";

/**
 * A deliberate error of an app's function, with structured data for the client — what
 * Convex's `ConvexError` is to its users:
 *
 * ```ts
 * if (balance < amount) throw new AppError({ code: "INSUFFICIENT_FUNDS", balance });
 * ```
 *
 * The client gets code APP_ERROR (HTTP 400), the message, and `data` as thrown (any
 * Cairn value: strings, numbers, objects, arrays…), on `error.data`. A mutation that
 * throws it writes nothing. Anything else a function throws (a bug, a failed
 * assumption) is FUNCTION_FAILED: the client learns only a request id, and the server
 * logs the stack under it.
 */
export class AppError<Data extends Value = Value> extends CairnError {
  declare readonly data: Data;

  /** `message` defaults to `data` itself when it is a string, else to a generic one. */
  constructor(data: Data, message?: string) {
    super("APP_ERROR", message ?? (typeof data === "string" ? data : "the function refused the call"), { data });
    this.name = "AppError";
  }
}
