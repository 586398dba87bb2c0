import { AsyncLocalStorage } from "node:async_hooks";
import { format } from "node:util";

/**
 * Which function call the code running now belongs to: its path and request id, carried
 * through every await of the call (AsyncLocalStorage). The id names the call in the
 * server's log and in what the client is told when the function fails; a call a function
 * makes (an action's runQuery) keeps its caller's id.
 */
export interface FunctionCall {
  readonly path: string;
  readonly requestId: string;
}

const calls = new AsyncLocalStorage<FunctionCall>();

export function currentFunctionCall(): FunctionCall | undefined {
  return calls.getStore();
}

/** Runs `run` as a call of `path`; `newRequestId` is used unless a call is running already (a nested call). */
export function runAsFunctionCall<T>(path: string, newRequestId: () => string, run: () => T): T {
  const requestId = calls.getStore()?.requestId ?? newRequestId();
  return calls.run({ path, requestId }, run);
}

const CONSOLE_METHODS = ["log", "info", "warn", "error", "debug"] as const;
let consolePrefixed = false;

/**
 * From now on, what a function prints with `console.*` is prefixed with its path and
 * request id (`[messages:send 3f9a…] …`), so that a line in a busy server's log can be
 * traced to its call; output outside any function call is left alone. Idempotent.
 */
export function prefixConsoleInFunctions(): void {
  if (consolePrefixed) return;
  consolePrefixed = true;
  for (const method of CONSOLE_METHODS) {
    const original = console[method].bind(console);
    console[method] = (...args: unknown[]) => {
      const call = calls.getStore();
      if (call === undefined) return original(...args);
      original(`[${call.path} ${call.requestId}] ${format(...args)}`);
    };
  }
}
