import { CairnError } from "../../src/base/errors.js";
import type { BenchSocket } from "./BenchSocket.js";

/** A counter of the bench app and its value as of the last bump this process made (only this process bumps it). */
export interface KnownCounter {
  readonly name: string;
  value: number;
}

/** One bump's timing, from the moment its Mutation frame was handed to the socket. */
export interface BumpTiming {
  /** Until the mutator's MutationResponse arrived: commit latency as a client sees it. */
  readonly committedMs: number;
  /** Until `seen` said the subscribers saw the new value (null without `seen`). */
  readonly seenMs: number | null;
}

/** Bumps `name` once, unobserved, to learn its value (creating the counter if it is new). */
export async function primeCounter(mutator: BenchSocket, name: string): Promise<KnownCounter> {
  const bump = mutator.mutate("counters:bump", { name });
  await bump.settled;
  return { name, value: valueOf((await bump.response).message.value, name) };
}

/**
 * `count` bumps of `counter`, one in flight: each is sent once the previous one has
 * settled (its response and the Transition owed to the mutator are in) and `seen` —
 * registered before the send — resolved with the time the subscribers it waits for
 * showed the new value.
 */
export async function sequentialBumps(mutator: BenchSocket, counter: KnownCounter, count: number, seen?: (expected: number) => Promise<number>): Promise<BumpTiming[]> {
  const timings: BumpTiming[] = [];
  for (let n = 0; n < count; n++) {
    const expected = counter.value + 1;
    const seenAt = seen?.(expected);
    const bump = mutator.mutate("counters:bump", { name: counter.name });
    const [response, seenAtMs] = await Promise.all([bump.response, seenAt, bump.settled]);
    const value = valueOf(response.message.value, counter.name);
    if (value !== expected) throw new CairnError("INTERNAL", `${counter.name} went to ${value}, not ${expected}: something else bumps it`);
    counter.value = value;
    timings.push({ committedMs: response.atMs - bump.sentMs, seenMs: seenAtMs === undefined ? null : seenAtMs - bump.sentMs });
  }
  return timings;
}

function valueOf(json: unknown, name: string): number {
  if (typeof json !== "number") throw new CairnError("INTERNAL", `counters:bump ${name} answered ${JSON.stringify(json)}, not a number`);
  return json;
}
