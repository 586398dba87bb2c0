/**
 * Scenario: one node's peer socket (fleet/PeerChannel) to a "writer" that is a real
 * WebSocket server on loopback, scripted per test: it answers out of order, drops the
 * socket with calls on it, refuses the upgrade, never finishes the handshake, sends
 * garbage. What must hold: every call settles exactly once, and `neverSent` is true only
 * for a call no socket ever carried (the writer surely did not run it); a call the writer
 * may have seen ends with an unknown outcome. Nothing is timed but the calls' own
 * deadlines.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { systemClock } from "../../src/base/index.js";
import { PeerChannel, type ChannelReply } from "../../src/fleet/PeerChannel.js";
import type { ForwardedCall } from "../../src/fleet/peerMessages.js";
import { eventually } from "../support/Gate.js";

interface Received {
  readonly ws: WebSocket;
  readonly id: number;
  readonly call: ForwardedCall;
  answer(status?: number, body?: unknown): void;
}

/** A writer's peer-socket end, scripted: it records calls and answers only when told. */
class ScriptedWriter {
  readonly received: Received[] = [];
  /** One-way frames (`{hints}`) that arrived. */
  readonly oneway: unknown[] = [];
  readonly upgrades: IncomingMessage[] = [];
  /** Status to refuse upgrades with (null: accept). */
  refuseWith: number | null = null;
  /** Take upgrade requests and never answer them. */
  swallowUpgrades = false;
  private readonly sockets = new WebSocketServer({ noServer: true });
  private readonly raw = new Set<Socket>();

  private constructor(
    private readonly http: Server,
    readonly baseUrl: string,
  ) {
    http.on("connection", (socket: Socket) => {
      this.raw.add(socket);
      socket.on("close", () => this.raw.delete(socket));
    });
    http.on("upgrade", (request: IncomingMessage, socket: Socket, head: Buffer) => {
      this.upgrades.push(request);
      if (this.swallowUpgrades) return;
      if (this.refuseWith !== null) {
        socket.end(`HTTP/1.1 ${this.refuseWith} Refused\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
        return;
      }
      this.sockets.handleUpgrade(request, socket, head, (ws) => {
        ws.on("message", (data) => {
          const frame = JSON.parse(data.toString()) as { id: number; call: ForwardedCall; hints?: unknown };
          if (frame.hints !== undefined) return void this.oneway.push(frame);
          this.received.push({
            ws,
            id: frame.id,
            call: frame.call,
            answer: (status = 200, body = { value: frame.call.path, ts: 7 }) => ws.send(JSON.stringify({ id: frame.id, status, body })),
          });
        });
      });
    });
  }

  static async start(): Promise<ScriptedWriter> {
    const http = createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    return new ScriptedWriter(http, `http://127.0.0.1:${(http.address() as AddressInfo).port}/`);
  }

  /** Drops every connection at once (a writer that died). */
  dropAll(): void {
    for (const socket of this.raw) socket.destroy();
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}

const call = (path: string): ForwardedCall => ({ path, args: {}, identity: null, clientId: "c", seq: 1 });
const unanswered = (reply: ChannelReply) => (reply.kind === "unanswered" ? reply : null);

describe("a peer channel", () => {
  let writer: ScriptedWriter;
  const channels: PeerChannel[] = [];
  afterEach(async () => {
    for (const channel of channels.splice(0)) channel.close();
    await writer?.close();
  });
  async function setup(): Promise<PeerChannel> {
    writer = await ScriptedWriter.start();
    const channel = new PeerChannel(writer.baseUrl, "s3cret", systemClock);
    channels.push(channel);
    return channel;
  }
  const forever = () => new AbortController().signal;

  it("sends every call on one socket with the admin key and matches answers by id, in whatever order they come", async () => {
    const channel = await setup();
    const replies = ["a", "b", "c"].map((path) => channel.call(call(path), 60_000, forever()));
    await eventually(() => writer.received.length === 3);
    expect(writer.upgrades).toHaveLength(1);
    expect(writer.upgrades[0]!.headers.authorization).toBe("Admin s3cret");
    expect(writer.upgrades[0]!.url).toBe("/api/internal/peer-socket");
    expect(new Set(writer.received.map((received) => received.ws)).size).toBe(1);
    for (const received of [...writer.received].reverse()) received.answer();
    expect(await Promise.all(replies)).toEqual(["a", "b", "c"].map((path) => ({ kind: "answered", status: 200, ok: true, body: { value: path, ts: 7 }, bodyInvalid: false })));
    expect(channel.size).toBe(0);
    // An error answer is an answer: the caller judges its body.
    const failed = channel.call(call("d"), 60_000, forever());
    await eventually(() => writer.received.length === 4);
    writer.received[3]!.answer(409, { error: { code: "CONFLICT" } });
    expect(await failed).toMatchObject({ kind: "answered", status: 409, ok: false, body: { error: { code: "CONFLICT" } } });
  });

  it("a socket that drops with calls on it: their outcome is unknown; the next call opens a new socket", async () => {
    const channel = await setup();
    const replies = [channel.call(call("a"), 60_000, forever()), channel.call(call("b"), 60_000, forever())];
    await eventually(() => writer.received.length === 2);
    writer.received[0]!.answer();
    writer.dropAll();
    const [first, second] = await Promise.all(replies);
    expect(first).toMatchObject({ kind: "answered", status: 200 });
    expect(unanswered(second!)).toMatchObject({ neverSent: false, timedOut: false, abandoned: false });
    expect(unanswered(second!)!.reason).toMatch(/connection lost/);
    const again = channel.call(call("c"), 60_000, forever());
    await eventually(() => writer.received.length === 3);
    expect(writer.upgrades).toHaveLength(2);
    writer.received[2]!.answer();
    expect(await again).toMatchObject({ kind: "answered", status: 200 });
  });

  it("a writer nobody listens for: the queued calls were never sent", async () => {
    const channel = await setup();
    await writer.close();
    const reply = await channel.call(call("a"), 60_000, forever());
    expect(reply).toMatchObject({ kind: "unopened", persistent: false });
  });

  it("an upgrade refused with an HTTP status, or never answered: the calls were never sent, and the caller goes over HTTP", async () => {
    const channel = await setup();
    writer.refuseWith = 403;
    expect(await channel.call(call("a"), 60_000, forever())).toMatchObject({ kind: "unopened", persistent: true, reason: expect.stringMatching(/HTTP 403/) });
    writer.refuseWith = null;
    writer.swallowUpgrades = true;
    expect(await channel.call(call("b"), 60_000, forever())).toMatchObject({ kind: "unopened", persistent: true });
    expect(writer.received).toEqual([]);
  });

  it("a deadline or an abandon settles the call at once: never sent while the socket opens, of unknown outcome once it was written", async () => {
    const channel = await setup();
    writer.swallowUpgrades = true;
    const queued = channel.call(call("queued"), 50, forever());
    expect(unanswered(await queued)).toMatchObject({ neverSent: true, timedOut: true });
    const abandon = new AbortController();
    const queuedAbandoned = channel.call(call("queued-abandoned"), 60_000, abandon.signal);
    abandon.abort();
    expect(unanswered(await queuedAbandoned)).toMatchObject({ neverSent: true, abandoned: true });
    writer.swallowUpgrades = false;
    await writer.close();

    const channel2 = await setup();
    const sent = channel2.call(call("sent"), 200, forever());
    await eventually(() => writer.received.length === 1);
    expect(unanswered(await sent)).toMatchObject({ neverSent: false, timedOut: true });
    const sentAbandon = new AbortController();
    const sentAbandoned = channel2.call(call("sent-abandoned"), 60_000, sentAbandon.signal);
    await eventually(() => writer.received.length === 2);
    sentAbandon.abort();
    expect(unanswered(await sentAbandoned)).toMatchObject({ neverSent: false, abandoned: true });
    // A late answer to a call that already settled changes nothing; the socket stays usable.
    writer.received[0]!.answer();
    const next = channel2.call(call("next"), 60_000, forever());
    await eventually(() => writer.received.length === 3);
    writer.received[2]!.answer();
    expect(await next).toMatchObject({ kind: "answered", body: { value: "next" } });
  });

  it("a frame that is not an answer ends the socket: the calls on it have unknown outcomes", async () => {
    const channel = await setup();
    const reply = channel.call(call("a"), 60_000, forever());
    await eventually(() => writer.received.length === 1);
    writer.received[0]!.ws.send("{not json");
    expect(unanswered(await reply)).toMatchObject({ neverSent: false });
  });

  it("a one-way frame (hints) settles once the socket took it, with no answer, on the socket that carries the calls", async () => {
    const channel = await setup();
    const first = channel.send(JSON.stringify({ hints: [{ shard: 0, seqno: 1 }] }), 60_000);
    expect(await first).toMatchObject({ kind: "answered", ok: true });
    expect(channel.size).toBe(0);
    await eventually(() => writer.oneway.length === 1);
    expect(writer.oneway).toEqual([{ hints: [{ shard: 0, seqno: 1 }] }]);
    // The same socket carries calls and hints.
    const reply = channel.call(call("a"), 60_000, forever());
    expect(await channel.send(JSON.stringify({ hints: [{ shard: 0, seqno: 2 }] }), 60_000)).toMatchObject({ kind: "answered" });
    await eventually(() => writer.received.length === 1 && writer.oneway.length === 2);
    writer.received[0]!.answer();
    expect(await reply).toMatchObject({ kind: "answered", body: { value: "a" } });
    expect(writer.upgrades).toHaveLength(1);
    // To a peer nobody listens for: never sent (the sender goes over HTTP, which says so).
    const nobody = new PeerChannel(writer.baseUrl, "s3cret", systemClock);
    channels.push(nobody);
    await writer.close();
    expect(await nobody.send(JSON.stringify({ hints: [] }), 60_000)).toMatchObject({ kind: "unopened", persistent: false });
  });

  it("close() settles every waiting call as abandoned and takes no more", async () => {
    const channel = await setup();
    const reply = channel.call(call("a"), 60_000, forever());
    await eventually(() => writer.received.length === 1);
    channel.close();
    expect(unanswered(await reply)).toMatchObject({ abandoned: true, neverSent: false });
    expect(unanswered(await channel.call(call("b"), 60_000, forever()))).toMatchObject({ neverSent: true });
  });
});
