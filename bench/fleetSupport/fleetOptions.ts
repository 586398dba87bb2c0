import { parseArgs } from "node:util";

/**
 * bench:fleet's sizes, one flag each; unknown flags and bad values are refused before
 * anything starts.
 */
export interface FleetBenchOptions {
  /** Fleet sizes to measure, each on a deployment of its own. */
  readonly nodes: readonly number[];
  /** The measured window per fleet size, after the warm-up. */
  readonly durationS: number;
  /** Load before the window (JIT, connection pools, the nodes' local stores settling). */
  readonly warmupS: number;
  /** Closed-loop clients in total, spread round-robin over the nodes. */
  readonly clients: number;
  readonly channels: number;
  readonly bodyBytes: number;
  /** Mutations started per second over all clients (0: closed loop, as fast as answers come): equal load on every fleet size, so CPU per mutation compares at equal batching. */
  readonly rate: number;
  /** Where clients send mutations: "spread" (any channel; nodes forward) or "owner" (only to shards their node writes: no forwarding). */
  readonly routing: "spread" | "owner";
  /** The fleet size at which a node is SIGKILLed after the window (0: none). */
  readonly killAt: number;
  /** How long the kill phase waits for every shard of the killed node to acknowledge a write. */
  readonly killWaitS: number;
  /** Where the nodes write V8 CPU profiles (--cpu-prof), or null. */
  readonly cpuProfileDir: string | null;
  /** Node ids, in the order nodes start (default: chosen so each fleet size splits the shards evenly). */
  readonly nodeIds: readonly string[] | null;
  readonly seed: number;
}

export const FLEET_BENCH_SHARDS = 6;

export function parseFleetBenchOptions(argv: readonly string[]): FleetBenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      nodes: { type: "string", default: "1,2,3" },
      "duration-s": { type: "string", default: "30" },
      "warmup-s": { type: "string", default: "10" },
      clients: { type: "string", default: "400" },
      channels: { type: "string", default: "1000" },
      "body-bytes": { type: "string", default: "100" },
      rate: { type: "string", default: "0" },
      routing: { type: "string", default: "spread" },
      "kill-at": { type: "string" },
      "kill-wait-s": { type: "string", default: "60" },
      "cpu-profile-dir": { type: "string" },
      "node-ids": { type: "string" },
      seed: { type: "string", default: "1" },
    },
  });
  const whole = (flag: string, text: string, min: number) => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) throw new Error(`--${flag}: expected a whole number ≥ ${min}, got ${JSON.stringify(text)}`);
    return value;
  };
  const nodes = [...new Set(values.nodes.split(",").map((item) => whole("nodes", item.trim(), 1)))].sort((a, b) => a - b);
  const largest = nodes[nodes.length - 1]!;
  const killAt = values["kill-at"] !== undefined ? whole("kill-at", values["kill-at"], 0) : largest >= 2 ? largest : 0;
  if (killAt !== 0 && (killAt < 2 || !nodes.includes(killAt))) throw new Error(`--kill-at must be 0 or one of --nodes that is at least 2`);
  const nodeIds = values["node-ids"]?.split(",").map((id) => id.trim()) ?? null;
  if (nodeIds !== null && nodeIds.length < largest) throw new Error(`--node-ids must name at least ${largest} nodes`);
  return {
    nodes,
    durationS: whole("duration-s", values["duration-s"], 1),
    warmupS: whole("warmup-s", values["warmup-s"], 0),
    clients: whole("clients", values.clients, 1),
    channels: whole("channels", values.channels, 1),
    bodyBytes: whole("body-bytes", values["body-bytes"], 0),
    rate: whole("rate", values.rate, 0),
    routing: routingOf(values.routing),
    killAt,
    killWaitS: whole("kill-wait-s", values["kill-wait-s"], 1),
    cpuProfileDir: values["cpu-profile-dir"] ?? null,
    nodeIds,
    seed: whole("seed", values.seed, 0),
  };
}

function routingOf(text: string): "spread" | "owner" {
  if (text === "spread" || text === "owner") return text;
  throw new Error(`--routing: expected "spread" or "owner", got ${JSON.stringify(text)}`);
}
