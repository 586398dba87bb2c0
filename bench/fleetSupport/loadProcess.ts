/**
 * Child-process entry: bench:fleet's load generator, in a process of its own so that its
 * clients' CPU is measured apart from the bench's and the nodes'. Its one argument is a
 * LoadConfig (JSON). It connects `clients` closed-loop clients, client i to node i mod N,
 * each posting `messages:send` to a random channel (so mutations spread over the shards)
 * and sending the next as soon as the last is acknowledged (with a rate, once the shared
 * pacer gives it a slot); a failed answer is re-sent
 * with the same receipt key after RETRY_PAUSE_MS. During a window it also runs the
 * cross-node probe (with 2 nodes or more). Commands and replies: loadProtocol.ts.
 *
 *   node --import tsx bench/fleetSupport/loadProcess.ts '<LoadConfig JSON>'
 */
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { randomInt, SeededRandom } from "../../src/base/random.js";
import { laneOfValue } from "../../src/functions/routing.js";
import { summarizeLatencies } from "../kit/LatencySummary.js";
import { progressPrinter } from "../kit/progress.js";
import { BenchSocket, updatedValue } from "../syncSupport/BenchSocket.js";
import { LOAD_PROGRESS_PREFIX, LoadClient } from "./LoadClient.js";
import type { CrossNodeFigures, KillFigures, LoadCommand, LoadConfig, LoadReply, LoadWindow } from "./loadProtocol.js";

/** Pause before a failed mutation is re-sent (a failover's answers would otherwise spin). */
const RETRY_PAUSE_MS = 50;
/** Connects opened at once (hundreds at a time would queue in the nodes' accept backlog). */
const CONNECT_BATCH = 50;
/** Pause between a probe being seen and the next one, uniform in [min, max] ms. */
const PROBE_PAUSE_MIN_MS = 100;
const PROBE_PAUSE_MAX_MS = 300;

const config = JSON.parse(process.argv[2]!) as LoadConfig;
const random = new SeededRandom(config.seed);
const wallMs = () => performance.timeOrigin + performance.now();
const progress = progressPrinter(LOAD_PROGRESS_PREFIX);
const syncUrl = (url: string) => `${url.replace(/^http/, "ws")}api/sync`;

const channels = Array.from({ length: config.channels }, (_, index) => {
  const name = `room-${index}`;
  return { name, shard: laneOfValue(name, config.numShards) };
});
const body = "m".repeat(Math.max(0, config.bodyBytes));

/** The window being measured (reset by window-start). */
let window = freshWindow();
/** After arm-kill: per shard, each acknowledged mutation's wall-clock send and acknowledgement times. */
let killAcks: Map<number, { readonly sentAt: number; readonly ackedAt: number }[]> | null = null;
let killFailures: Record<string, number> = {};
let running = true;
let acknowledgedSinceStart = 0;

function freshWindow() {
  return { startedMs: performance.now(), owned: [] as number[], forwarded: [] as number[], perNode: {} as Record<string, number>, failures: {} as Record<string, number> };
}

/** With a rate: when the next mutation may start (one slot per 1/rate s, shared by every client). */
let nextSlotMs = 0;

async function paced(): Promise<void> {
  if (config.rate <= 0) return;
  const nowMs = performance.now();
  const slotMs = Math.max(nowMs, nextSlotMs);
  nextSlotMs = slotMs + 1000 / config.rate;
  if (slotMs > nowMs) await sleep(slotMs - nowMs);
}

/** Per node, the channels of the shards it writes (routing "owner"). */
const ownedByNode = new Map<string, typeof channels>();
function ownedChannels(nodeId: string): typeof channels {
  let owned = ownedByNode.get(nodeId);
  if (owned === undefined) ownedByNode.set(nodeId, (owned = channels.filter((channel) => config.owners[channel.shard] === nodeId)));
  return owned;
}

async function clientLoop(client: LoadClient, nodeId: string): Promise<void> {
  let seq = 0;
  while (running && !client.closed) {
    await paced();
    if (!running || client.closed) return;
    const choices = config.routing === "owner" ? ownedChannels(nodeId) : channels;
    const channel = choices[randomInt(random, choices.length)]!;
    seq++;
    const args = { channel: channel.name, author: client.clientId, n: seq, body };
    const sentMs = performance.now();
    for (;;) {
      const answer = await client.mutate("messages:send", args, seq);
      if (answer.ok) {
        acknowledgedSinceStart++;
        const current = window;
        if (sentMs >= current.startedMs) (config.owners[channel.shard] === nodeId ? current.owned : current.forwarded).push(answer.atMs - sentMs);
        if (answer.atMs >= current.startedMs) current.perNode[nodeId] = (current.perNode[nodeId] ?? 0) + 1;
        killAcks?.get(channel.shard)?.push({ sentAt: performance.timeOrigin + sentMs, ackedAt: performance.timeOrigin + answer.atMs });
        break;
      }
      window.failures[answer.code] = (window.failures[answer.code] ?? 0) + 1;
      if (killAcks !== null) killFailures[answer.code] = (killFailures[answer.code] ?? 0) + 1;
      if (!running || client.closed) return;
      await sleep(RETRY_PAUSE_MS);
    }
  }
}

/**
 * The cross-node probe: a subscriber socket on every node, subscribed to the newest
 * message of one probe channel per shard; probe k posts to shard k mod S's channel
 * through node Y and times it until the subscriber on node X ≠ Y sees it.
 */
class CrossNodeProbe {
  private readonly samples = { all: [] as number[], sender: [] as number[], subscriber: [] as number[], third: [] as number[], commit: [] as number[] };
  private stopRequested = false;
  private loop: Promise<void> = Promise.resolve();

  private constructor(
    private readonly subscribers: readonly BenchSocket[],
    private readonly senders: readonly BenchSocket[],
    /** Per subscriber, per shard: the queryId of that shard's probe channel. */
    private readonly queryIds: readonly (readonly number[])[],
    private readonly probeChannels: readonly string[],
  ) {}

  static async open(): Promise<CrossNodeProbe> {
    const probeChannels = Array.from({ length: config.numShards }, (_, shard) => {
      for (let index = 0; ; index++) if (laneOfValue(`probe-${index}`, config.numShards) === shard) return `probe-${index}`;
    });
    const subscribers: BenchSocket[] = [];
    const senders: BenchSocket[] = [];
    const queryIds: number[][] = [];
    for (const node of config.nodes) {
      const subscriber = await BenchSocket.connect(syncUrl(node.url));
      const ids: number[] = [];
      for (const channel of probeChannels) ids.push((await subscriber.subscribe("messages:latest", { channel })).queryId);
      subscribers.push(subscriber);
      queryIds.push(ids);
      senders.push(await BenchSocket.connect(syncUrl(node.url)));
    }
    return new CrossNodeProbe(subscribers, senders, queryIds, probeChannels);
  }

  start(): void {
    for (const list of Object.values(this.samples)) list.length = 0;
    this.stopRequested = false;
    this.loop = this.run();
  }

  async stop(): Promise<CrossNodeFigures> {
    this.stopRequested = true;
    await this.loop;
    return {
      all: summarizeLatencies(this.samples.all),
      ownerIsSender: summarizeLatencies(this.samples.sender),
      ownerIsSubscriber: summarizeLatencies(this.samples.subscriber),
      ownerIsThird: summarizeLatencies(this.samples.third),
      commit: summarizeLatencies(this.samples.commit),
    };
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscribers, ...this.senders].map((socket) => socket.close()));
  }

  private n = 0;

  private async run(): Promise<void> {
    const nodes = config.nodes.length;
    for (let k = 0; !this.stopRequested; k++) {
      const shard = k % config.numShards;
      const x = Math.floor(k / config.numShards) % nodes;
      const y = (x + 1 + (Math.floor(k / (config.numShards * nodes)) % (nodes - 1))) % nodes;
      const n = ++this.n;
      const seen = this.subscribers[x]!.expect((message) => updatedValue(message, this.queryIds[x]![shard]!) === n);
      const mutation = this.senders[y]!.mutate("messages:send", { channel: this.probeChannels[shard]!, author: "probe", n, body: "probe" });
      const [response, transition] = await Promise.all([mutation.response, seen, mutation.settled]);
      const latency = transition.atMs - mutation.sentMs;
      const owner = config.owners[shard];
      this.samples.all.push(latency);
      (owner === config.nodes[y]!.nodeId ? this.samples.sender : owner === config.nodes[x]!.nodeId ? this.samples.subscriber : this.samples.third).push(latency);
      this.samples.commit.push(response.atMs - mutation.sentMs);
      await sleep(PROBE_PAUSE_MIN_MS + random.float() * (PROBE_PAUSE_MAX_MS - PROBE_PAUSE_MIN_MS));
    }
  }
}

const clients: { readonly client: LoadClient; readonly nodeId: string }[] = [];
for (let start = 0; start < config.clients; start += CONNECT_BATCH) {
  const batch = Array.from({ length: Math.min(CONNECT_BATCH, config.clients - start) }, async (_, offset) => {
    const index = start + offset;
    const node = config.nodes[index % config.nodes.length]!;
    return { client: await LoadClient.connect(syncUrl(node.url), `load-${config.seed}-${index}`), nodeId: node.nodeId };
  });
  clients.push(...(await Promise.all(batch)));
}
const probe = config.probes && config.nodes.length > 1 ? await CrossNodeProbe.open() : null;
const loops = clients.map(({ client, nodeId }) => clientLoop(client, nodeId));
reply({ type: "ready", clients: clients.length });

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const command = JSON.parse(line) as LoadCommand;
  try {
    if (command.command === "stop") break;
    reply(await run(command));
  } catch (error) {
    reply({ type: "error", error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
}
running = false;
for (const { client } of clients) client.close();
await Promise.all(loops);
await probe?.close();
reply({ type: "ok" });

async function run(command: Exclude<LoadCommand, { command: "stop" }>): Promise<LoadReply> {
  switch (command.command) {
    case "window-start":
      window = freshWindow();
      probe?.start();
      return { type: "ok" };
    case "window-end": {
      const ended = window;
      const endedMs = performance.now();
      window = freshWindow();
      const crossNode = probe === null ? null : await probe.stop();
      const figures: LoadWindow = {
        wallMs: endedMs - ended.startedMs,
        mutations: Object.values(ended.perNode).reduce((sum, count) => sum + count, 0),
        mutationsSinceStart: acknowledgedSinceStart,
        owned: summarizeLatencies(ended.owned),
        forwarded: summarizeLatencies(ended.forwarded),
        perNode: ended.perNode,
        failures: ended.failures,
        crossNode,
      };
      return { type: "window", window: figures };
    }
    case "arm-kill":
      killAcks = new Map(Array.from({ length: config.numShards }, (_, shard) => [shard, []]));
      killFailures = {};
      return { type: "ok" };
    case "killed":
      return { type: "kill", kill: await awaitTakeover(command) };
  }
}

/**
 * Waits until each of the killed node's shards acknowledged a write sent after the kill
 * (one sent before may have been committed by the killed node, its answer relayed after
 * the kill), or the wait runs out.
 */
async function awaitTakeover(command: Extract<LoadCommand, { command: "killed" }>): Promise<KillFigures> {
  const acks = killAcks;
  if (acks === null) throw new Error("killed before arm-kill");
  const firstAfter = (shard: number) => {
    const after = acks.get(shard)!.filter((ack) => ack.sentAt >= command.atWallMs);
    return after.length === 0 ? null : Math.min(...after.map((ack) => ack.ackedAt));
  };
  const startedMs = wallMs();
  while (command.shards.some((shard) => firstAfter(shard) === null) && wallMs() - startedMs < command.waitMsMax) await sleep(20);
  const firstAckMs: Record<string, number | null> = {};
  for (const shard of command.shards) {
    const at = firstAfter(shard);
    firstAckMs[String(shard)] = at === null ? null : Math.round(at - command.atWallMs);
  }
  killAcks = null;
  const clientsLost = clients.filter(({ nodeId }) => nodeId === command.nodeId).length;
  progress(`takeover: ${JSON.stringify(firstAckMs)} ms after the kill`);
  return { firstAckMs, clientsLost, failures: killFailures };
}

function reply(message: LoadReply): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}
