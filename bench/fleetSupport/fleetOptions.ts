import { flag, parseFlags, type FlagValues } from "../kit/flags.js";

/** bench:fleet's sizes, one flag each. */
export const FLEET_BENCH_SHARDS = 6;

const ROUTINGS = ["spread", "owner"] as const;

const FLEET_BENCH_FLAGS = {
  /** Fleet sizes to measure, each on a deployment of its own (ascending, each once). */
  nodes: flag.wholeNumbers("fleet sizes to measure", [1, 2, 3], { sorted: true }),
  /** The measured window per fleet size, after the warm-up. */
  durationS: flag.wholeNumber("measured seconds per fleet size", 30),
  /** Load before the window (JIT, connection pools, the nodes' local stores settling). */
  warmupS: flag.wholeNumber("warm-up seconds before the window", 10, 0),
  /** Closed-loop clients in total, spread round-robin over the nodes. */
  clients: flag.wholeNumber("closed-loop clients in total, round-robin over the nodes", 400),
  channels: flag.wholeNumber("channels the clients post to", 1_000),
  bodyBytes: flag.wholeNumber("bytes of a message body, roughly", 100, 0),
  /** Mutations started per second over all clients (0: closed loop, as fast as answers come): equal load on every fleet size, so CPU per mutation compares at equal batching. */
  rate: flag.wholeNumber("mutations started per second over all clients (0: as fast as answers come)", 0, 0),
  /** Where clients send mutations: "spread" (any channel; nodes forward) or "owner" (only to shards their node writes: no forwarding). */
  routing: flag.choice("where clients send mutations", ROUTINGS, "spread"),
  /** The fleet size at which a node is SIGKILLed after the window (0: none); null here: the largest size, if at least 2 (see FleetBenchOptions). */
  killAt: flag.optionalWholeNumber("the fleet size at which a node is SIGKILLed (0: none)", { min: 0, absent: "the largest of --nodes, if 2 or more" }),
  /** How long the kill phase waits for every shard of the killed node to acknowledge a write. */
  killWaitS: flag.wholeNumber("seconds the kill phase waits for the killed node's shards", 60),
  /** Where the nodes write V8 CPU profiles (--cpu-prof), or null. */
  cpuProfileDir: flag.optionalText("where the nodes write V8 CPU profiles", "dir"),
  /** Node ids, in the order nodes start (default: chosen so each fleet size splits the shards evenly). */
  nodeIds: flag.optionalTexts("node ids in start order", { absent: "chosen so each fleet size splits the shards evenly" }),
  seed: flag.wholeNumber("seed of the load", 1, 0),
};

/** The parsed flags, with `killAt` settled: 0 (no kill) or one of `nodes`, at least 2. */
export type FleetBenchOptions = Omit<FlagValues<typeof FLEET_BENCH_FLAGS>, "killAt"> & { readonly killAt: number };

export function parseFleetBenchOptions(argv: readonly string[]): FleetBenchOptions {
  const given = parseFlags(argv, {
    name: "bench:fleet",
    description: "a fleet of 1, 2 and 3 `cairn serve --fleet` nodes: throughput, CPU per mutation, failover time",
    flags: FLEET_BENCH_FLAGS,
    check: (options) => {
      const largest = options.nodes[options.nodes.length - 1]!;
      if (options.killAt !== null && options.killAt !== 0 && (options.killAt < 2 || !options.nodes.includes(options.killAt))) return "--kill-at must be 0 or one of --nodes that is at least 2";
      if (options.nodeIds !== null && options.nodeIds.length < largest) return `--node-ids must name at least ${largest} nodes`;
      return null;
    },
  });
  const largest = given.nodes[given.nodes.length - 1]!;
  return { ...given, killAt: given.killAt ?? (largest >= 2 ? largest : 0) };
}
