/** What `drained` waits on: a writable stream (an HTTP response, a request being sent). */
interface Drainable {
  on(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

/**
 * Resolves once `stream` can take more (`drain`) or is gone (`close`), leaving no
 * listener behind: a transfer that waits at every full buffer would otherwise add a
 * `close` listener per wait (MaxListenersExceededWarning, and memory for the transfer's
 * length).
 */
export function drained(stream: Drainable): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}
