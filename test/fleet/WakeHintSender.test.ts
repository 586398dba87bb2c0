/**
 * Scenario: a writer's wake hints (DESIGN.md §9) sent over real HTTP (global fetch) to a
 * real node:http server that stands in for the replicas. The server can hold its answers,
 * so a test sees exactly what is on the wire while a request is outstanding: at most one
 * request per replica, hints made meanwhile collapsed into the newest seqno per shard, a
 * global bound past which hints are dropped, and replicas that are dead, slow or broken
 * costing the caller nothing. Everything is counted, nothing is timed.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HINT_PENDING_BYTES_MAX, HINT_TARGETS_MAX } from "../../src/base/index.js";
import { PeerClient } from "../../src/fleet/PeerClient.js";
import { WakeHintSender, type WakeHintTarget } from "../../src/fleet/WakeHintSender.js";
import { eventually } from "../support/Gate.js";
import { turns } from "../replica/replicaSupport.js";

interface ReceivedHint {
  /** The replica the request was for: the first path segment of its base URL. */
  readonly replica: string;
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: unknown;
  answered: boolean;
  answer(status?: number): void;
}

/** One HTTP server playing every replica, each under its own base path (`/{replica}/`). */
class ReplicaServer {
  readonly received: ReceivedHint[] = [];
  /** Replicas whose requests are held until the test answers them. */
  readonly holding = new Set<string>();
  /** Status answered to replicas not held (default 200). */
  readonly status = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  /** The most requests ever outstanding at once, per replica. */
  readonly inFlightMax = new Map<string, number>();
  /** The most requests ever outstanding at once over all replicas. */
  totalInFlightMax = 0;
  private totalInFlight = 0;

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async start(): Promise<ReplicaServer> {
    let self: ReplicaServer | undefined;
    const server = createServer((request, response) => void self!.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    self = new ReplicaServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  target(replica: string): WakeHintTarget {
    return { nodeId: replica, url: `${this.origin}/${replica}/` };
  }

  of(replica: string): ReceivedHint[] {
    return this.received.filter((request) => request.replica === replica);
  }

  /** Answers every held request (each at most once). */
  answerAll(): void {
    for (const request of this.received) if (!request.answered) request.answer();
  }

  async close(): Promise<void> {
    this.holding.clear();
    this.answerAll();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = request.url ?? "";
    const replica = path.split("/")[1] ?? "";
    const count = (this.inFlight.get(replica) ?? 0) + 1;
    this.inFlight.set(replica, count);
    this.inFlightMax.set(replica, Math.max(this.inFlightMax.get(replica) ?? 0, count));
    this.totalInFlightMax = Math.max(this.totalInFlightMax, ++this.totalInFlight);
    const received: ReceivedHint = {
      replica,
      method: request.method ?? "",
      path,
      authorization: request.headers.authorization,
      contentType: request.headers["content-type"],
      body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
      answered: false,
      answer: (status = this.status.get(replica) ?? 200) => {
        if (received.answered) return;
        received.answered = true;
        this.inFlight.set(replica, (this.inFlight.get(replica) ?? 1) - 1);
        this.totalInFlight--;
        response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ ok: status === 200 }));
      },
    };
    this.received.push(received);
    if (!this.holding.has(replica)) received.answer();
  }
}

/** A loopback port nothing listens on (a replica that died). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/`;
}

/** A distinct 64-hex-digit hash per (shard, seqno). */
const hashOf = (shard: number, seqno: number) => createHash("sha256").update(`${shard}/${seqno}`).digest("hex");
const hintsOf = (request: ReceivedHint | undefined) => (request?.body as { hints: { shard: number; seqno: number; hash?: string; segment?: string }[] } | undefined)?.hints;

describe("wake hint sender", () => {
  let server: ReplicaServer;
  const senders: WakeHintSender[] = [];
  afterEach(async () => {
    for (const sender of senders.splice(0)) sender.close();
    await server?.close();
  });
  async function setup(options: { concurrencyMax?: number; timeoutMs?: number; fetch?: typeof fetch } = {}) {
    server = await ReplicaServer.start();
    const { fetch, ...tuning } = options;
    // Hints over HTTP (what a peer that refuses the peer socket gets): each request is seen here.
    const sender = new WakeHintSender({ peers: new PeerClient({ adminKey: "s3cret", peerSockets: false, ...(fetch !== undefined ? { fetch } : {}) }), ...tuning });
    senders.push(sender);
    return sender;
  }

  it("POSTs {hints:[{shard, seqno, hash}]} to {url}api/internal/hint with the admin key, and counts what was answered", async () => {
    const sender = await setup();
    sender.setTargets([server.target("a"), server.target("b")]);
    expect(sender.targetCount).toBe(2);
    expect(sender.hint({ shard: 3, seqno: 42, hash: hashOf(3, 42) })).toBeUndefined();
    await eventually(() => sender.stats().sent === 2);
    for (const replica of ["a", "b"]) {
      const [request] = server.of(replica);
      expect(request).toMatchObject({ method: "POST", path: `/${replica}/api/internal/hint`, authorization: "Admin s3cret", contentType: "application/json" });
      expect(request!.body).toEqual({ hints: [{ shard: 3, seqno: 42, hash: hashOf(3, 42) }] });
    }
    expect(sender.stats()).toEqual({ sent: 2, failed: 0, dropped: 0 });
  });

  it("keeps at most one request per replica on the wire; verified hints made meanwhile wait in seqno order per shard, hints without a hash collapse into the newest", async () => {
    const sender = await setup();
    server.holding.add("a");
    sender.setTargets([server.target("a")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.of("a").length === 1);
    for (const [shard, seqno] of [[0, 2], [0, 5], [0, 3], [1, 7], [1, 6], [2, 0]] as const) sender.hint({ shard, seqno, hash: hashOf(shard, seqno) });
    await turns();
    expect(server.of("a")).toHaveLength(1);
    server.of("a")[0]!.answer();
    await eventually(() => server.of("a").length === 2);
    // Every vouch goes, each with the hash of the segment it names; one older than the
    // shard's last (a reordered call) says nothing new and is left out.
    expect(hintsOf(server.of("a")[1])).toEqual([
      { shard: 0, seqno: 2, hash: hashOf(0, 2) },
      { shard: 0, seqno: 5, hash: hashOf(0, 5) },
      { shard: 1, seqno: 7, hash: hashOf(1, 7) },
      { shard: 2, seqno: 0, hash: hashOf(2, 0) },
    ]);
    await turns();
    expect(server.of("a")).toHaveLength(2); // nothing else was pending
    server.of("a")[1]!.answer();
    await eventually(() => sender.stats().sent === 5);
    // A burst of hints while nothing is outstanding: one request now, one for the rest.
    for (let seqno = 10; seqno < 200; seqno++) sender.hint({ shard: 0, seqno });
    await eventually(() => server.of("a").length === 3);
    expect(hintsOf(server.of("a")[2])).toEqual([{ shard: 0, seqno: 10 }]);
    server.of("a")[2]!.answer();
    await eventually(() => server.of("a").length === 4);
    expect(hintsOf(server.of("a")[3])).toEqual([{ shard: 0, seqno: 199 }]);
    server.of("a")[3]!.answer();
    await eventually(() => sender.stats().sent === 7);
    expect(server.inFlightMax.get("a")).toBe(1);
    expect(sender.stats()).toEqual({ sent: 7, failed: 0, dropped: 0 });
  });

  it("a pending \"verifying\" hint gives way to the verified hint of the same segment, never the other way round", async () => {
    const sender = await setup();
    server.holding.add("a");
    sender.setTargets([server.target("a")]);
    sender.hint({ shard: 0, seqno: 4, verifying: true });
    await eventually(() => server.of("a").length === 1);
    expect(hintsOf(server.of("a")[0])).toEqual([{ shard: 0, seqno: 4, verifying: true }]);
    sender.hint({ shard: 0, seqno: 4, hash: hashOf(0, 4) });
    sender.hint({ shard: 0, seqno: 5, verifying: true });
    sender.hint({ shard: 0, seqno: 5, hash: hashOf(0, 5) });
    sender.hint({ shard: 1, seqno: 9, hash: hashOf(1, 9) });
    sender.hint({ shard: 1, seqno: 9, verifying: true }); // late: the verified hint stays
    server.of("a")[0]!.answer();
    await eventually(() => server.of("a").length === 2);
    expect(hintsOf(server.of("a")[1])).toEqual([
      { shard: 0, seqno: 4, hash: hashOf(0, 4) },
      { shard: 0, seqno: 5, hash: hashOf(0, 5) },
      { shard: 1, seqno: 9, hash: hashOf(1, 9) },
    ]);
    server.of("a")[1]!.answer();
  });

  it("sends a verified segment's bytes in base64 with its hash; past the byte bound the oldest waiting hints lose their bytes, never their order", async () => {
    const sender = await setup();
    server.holding.add("a");
    sender.setTargets([server.target("a")]);
    sender.hint({ shard: 0, seqno: 1, hash: hashOf(0, 1), segment: Buffer.from("segment one") });
    await eventually(() => server.of("a").length === 1);
    expect(hintsOf(server.of("a")[0])).toEqual([{ shard: 0, seqno: 1, hash: hashOf(0, 1), segment: Buffer.from("segment one").toString("base64") }]);
    // Behind the held request: segments of HINT_PENDING_BYTES_MAX / 4 bytes, six of them.
    const big = (seqno: number) => Buffer.alloc(HINT_PENDING_BYTES_MAX / 4, seqno);
    for (let seqno = 2; seqno <= 7; seqno++) sender.hint({ shard: 0, seqno, hash: hashOf(0, seqno), segment: big(seqno) });
    server.of("a")[0]!.answer();
    await eventually(() => server.of("a").length === 2);
    const sent = hintsOf(server.of("a")[1])!;
    expect(sent.map((hint) => hint.seqno)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(sent.every((hint) => hint.hash === hashOf(0, hint.seqno))).toBe(true);
    // The newest four fit the bound and keep their bytes; the oldest two are vouched by hash only.
    expect(sent.map((hint) => hint.segment !== undefined)).toEqual([false, false, true, true, true, true]);
    expect(Buffer.from(sent[5]!.segment!, "base64").equals(big(7))).toBe(true);
    server.of("a")[1]!.answer();
  });

  it("a replica that holds its answer delays no other replica", async () => {
    const sender = await setup();
    server.holding.add("slow");
    sender.setTargets([server.target("slow"), server.target("fast")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.of("fast").length === 1 && server.of("slow").length === 1);
    await eventually(() => server.of("fast")[0]!.answered);
    sender.hint({ shard: 0, seqno: 2 });
    await eventually(() => hintsOf(server.of("fast").at(-1))?.[0]?.seqno === 2);
    sender.hint({ shard: 0, seqno: 3 });
    await eventually(() => hintsOf(server.of("fast").at(-1))?.[0]?.seqno === 3);
    expect(server.of("slow")).toHaveLength(1);
    server.of("slow")[0]!.answer();
    await eventually(() => server.of("slow").length === 2);
    expect(hintsOf(server.of("slow")[1])).toEqual([{ shard: 0, seqno: 3 }]);
  });

  it("drops a hint when concurrencyMax requests are in flight, and counts it; later hints flow again", async () => {
    const sender = await setup({ concurrencyMax: 2 });
    for (const replica of ["a", "b", "c"]) server.holding.add(replica);
    sender.setTargets([server.target("a"), server.target("b"), server.target("c")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.received.length === 2);
    expect(sender.stats()).toEqual({ sent: 0, failed: 0, dropped: 1 });
    expect(server.of("c")).toEqual([]);
    // a and b keep theirs pending behind the outstanding request; c is over the bound again.
    sender.hint({ shard: 0, seqno: 2 });
    expect(sender.stats().dropped).toBe(2);
    await turns();
    expect(server.received).toHaveLength(2);
    // a's answer lets a's pending hint go (the slot is a's again), never c's dropped ones.
    server.of("a")[0]!.answer();
    await eventually(() => server.of("a").length === 2);
    expect(hintsOf(server.of("a")[1])).toEqual([{ shard: 0, seqno: 2 }]);
    for (const replica of ["a", "b", "c"]) server.holding.delete(replica);
    server.answerAll();
    await eventually(() => server.of("b").length === 2);
    server.answerAll();
    await eventually(() => sender.stats().sent === 4);
    await turns();
    expect(server.of("c")).toEqual([]);
    // A drop is not sticky: with one replica fewer, the next hint fits the bound and reaches c.
    sender.setTargets([server.target("b"), server.target("c")]);
    sender.hint({ shard: 0, seqno: 3 });
    await eventually(() => sender.stats().sent === 6);
    expect(hintsOf(server.of("c")[0])).toEqual([{ shard: 0, seqno: 3 }]);
    expect(sender.stats()).toEqual({ sent: 6, failed: 0, dropped: 2 });
    expect(Math.max(...server.inFlightMax.values())).toBe(1);
    expect(server.totalInFlightMax).toBe(2);
  });

  it("dead, broken and failing replicas are counted as failed and cost the caller nothing; hint() never throws or waits", async () => {
    const sender = await setup();
    server.status.set("broken", 503);
    sender.setTargets([
      { nodeId: "dead", url: await deadUrl() },
      { nodeId: "garbage-url", url: "this is not a url" },
      server.target("broken"),
      server.target("ok"),
    ]);
    let returned: unknown = "not returned";
    expect(() => (returned = sender.hint({ shard: 0, seqno: 1 }))).not.toThrow();
    expect(returned).toBeUndefined();
    await eventually(() => sender.stats().sent + sender.stats().failed === 4);
    expect(sender.stats()).toEqual({ sent: 1, failed: 3, dropped: 0 });
    // Failures are not retried: the replicas' polls are the backstop.
    await turns();
    expect(server.of("broken")).toHaveLength(1);
    // Nothing is stuck behind a failure: the next hint goes to each again.
    sender.hint({ shard: 0, seqno: 2 });
    await eventually(() => sender.stats().sent + sender.stats().failed === 8);
    expect(server.of("broken")).toHaveLength(2);
    expect(hintsOf(server.of("ok")[1])).toEqual([{ shard: 0, seqno: 2 }]);
  });

  it("a replica that never answers is given up after timeoutMs, and the hints pending behind it are then sent", async () => {
    const sender = await setup({ timeoutMs: 100 });
    server.holding.add("silent");
    sender.setTargets([server.target("silent")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.of("silent").length === 1);
    sender.hint({ shard: 0, seqno: 2 });
    sender.hint({ shard: 0, seqno: 3 });
    await eventually(() => server.of("silent").length === 2);
    expect(sender.stats()).toMatchObject({ sent: 0, failed: 1 });
    expect(hintsOf(server.of("silent")[1])).toEqual([{ shard: 0, seqno: 3 }]);
  });

  it("a fetch that throws at once, or never settles, is contained: hint() returns, others are served", async () => {
    let calls = 0;
    const hanging = new Promise<Response>(() => undefined);
    const sender = await setup({
      fetch: ((input: string | URL | Request, init?: RequestInit) => {
        calls++;
        const url = String(input);
        if (url.includes("/throws/")) throw new TypeError("synchronous failure");
        if (url.includes("/hangs/")) return hanging;
        return globalThis.fetch(input, init);
      }) as typeof fetch,
    });
    sender.setTargets([server.target("throws"), server.target("hangs"), server.target("ok")]);
    expect(() => sender.hint({ shard: 0, seqno: 1 })).not.toThrow();
    expect(() => sender.hint({ shard: 0, seqno: 2 })).not.toThrow();
    await eventually(() => sender.stats().sent === 2 && sender.stats().failed >= 1);
    // "hangs" stays at one outstanding call however many hints come.
    for (let seqno = 3; seqno < 50; seqno++) sender.hint({ shard: 0, seqno });
    await eventually(() => hintsOf(server.of("ok").at(-1))?.[0]?.seqno === 49);
    expect(calls).toBeLessThan(3 * 10);
    expect(server.of("hangs")).toEqual([]);
  });

  it("setTargets keeps the outstanding request of an unchanged replica, forgets a removed one, and starts afresh for a moved one", async () => {
    const sender = await setup();
    server.holding.add("a");
    server.holding.add("gone");
    sender.setTargets([server.target("a"), server.target("gone")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.received.length === 2);
    sender.setTargets([server.target("a"), server.target("gone")]); // a refresh of the registry, unchanged
    sender.hint({ shard: 0, seqno: 2 });
    await turns();
    expect(server.of("a")).toHaveLength(1); // still one on the wire for a
    sender.setTargets([server.target("a")]);
    server.of("gone")[0]!.answer();
    server.of("a")[0]!.answer();
    await eventually(() => server.of("a").length === 2);
    await turns();
    expect(server.of("gone")).toHaveLength(1); // its pending hint died with it
    expect(server.inFlightMax.get("a")).toBe(1);
    // a moves to a new URL while a request to the old one is outstanding: the new URL is hinted.
    server.holding.delete("a");
    sender.setTargets([{ nodeId: "a", url: `${server.origin}/a-moved/` }]);
    sender.hint({ shard: 0, seqno: 3 });
    await eventually(() => server.of("a-moved").length === 1);
    expect(hintsOf(server.of("a-moved")[0])).toEqual([{ shard: 0, seqno: 3 }]);
  });

  it("after close(), hints send nothing, and answers to outstanding requests send nothing more", async () => {
    const sender = await setup();
    server.holding.add("a");
    sender.setTargets([server.target("a")]);
    sender.hint({ shard: 0, seqno: 1 });
    await eventually(() => server.of("a").length === 1);
    sender.hint({ shard: 0, seqno: 2 });
    sender.close();
    sender.hint({ shard: 0, seqno: 3 });
    server.of("a")[0]!.answer();
    await eventually(() => sender.stats().sent === 1);
    await turns();
    expect(server.of("a")).toHaveLength(1);
    expect(sender.targetCount).toBe(0);
  });

  it("keeps at most HINT_TARGETS_MAX targets, however many announce themselves", () => {
    const sender = new WakeHintSender({ peers: new PeerClient({ adminKey: "s3cret" }) });
    const target = (n: number): WakeHintTarget => ({ nodeId: `node-${n}`, url: `http://127.0.0.1:1/node-${n}/` });
    for (let n = 0; n < HINT_TARGETS_MAX; n++) expect(sender.addTarget(target(n))).toBe(true);
    expect(sender.addTarget(target(HINT_TARGETS_MAX))).toBe(false);
    expect(sender.targetCount).toBe(HINT_TARGETS_MAX);
    // One it keeps may move; a listing replaces the set, bounded too.
    expect(sender.addTarget({ nodeId: "node-0", url: "http://127.0.0.1:2/moved/" })).toBe(true);
    sender.setTargets(Array.from({ length: HINT_TARGETS_MAX + 5 }, (_, n) => target(n + 10_000)));
    expect(sender.targetCount).toBe(HINT_TARGETS_MAX);
    sender.close();
  });
});
