import { type Clock, systemClock } from "../base/index.js";
import { type ChannelReply, PeerChannel } from "./PeerChannel.js";
import { type Announcement, type ForwardedCall, type ForwardedKind, PEER_ROUTES, type WakeHintsMessage, wakeHintsBody } from "./peerMessages.js";

export interface PeerClientOptions {
  /** The deployment's admin key: peers take node-to-node messages only with it. */
  readonly adminKey: string;
  /** For tests: the request function (default: global fetch). */
  readonly fetch?: typeof fetch;
  /** Whether forwarded mutations and hints travel on peer sockets (default true); else each is an HTTP request. */
  readonly peerSockets?: boolean;
  /** Times forwarded calls on the sockets out, and how long a refused socket is not retried (default systemClock). */
  readonly clock?: Clock;
}

/** How a request to a peer ended, transport-wise (what the body says is the caller's to judge). */
export type PeerReply =
  | { readonly kind: "answered"; readonly status: number; readonly ok: boolean; readonly body: unknown; readonly bodyInvalid: boolean }
  | {
      readonly kind: "unanswered";
      /** Refused before a connection existed: the peer surely did not see the request. */
      readonly neverSent: boolean;
      /** The deadline passed (as opposed to a reset, or the caller's own abort). */
      readonly timedOut: boolean;
      /** The caller's signal ended it. */
      readonly abandoned: boolean;
      readonly reason: string;
    };

/** Connection errors that mean the request never reached a server. */
const NOT_CONNECTED_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** An announcement (or a probe) is a courtesy: the registry finds the node anyway, so it is not waited on long. */
const ANNOUNCE_TIMEOUT_MS = 2_000;
/** Peer sockets kept open at once (one per peer this node sends to); the least recently used idle one goes first. */
const PEER_CHANNELS_MAX = 64;
/** After a peer (or a proxy before it) answered but did not take the peer socket, what goes to it goes over HTTP this long before the socket is tried again. */
const REFUSED_SOCKET_RETRY_MS = 10_000;

/**
 * The one way a node talks to another (DESIGN.md §9): every node-to-node request — wake
 * hints, announcements, forwarded writes — goes through here, with the admin key, the
 * message shapes of peerMessages.ts and one classification of how a request failed.
 *
 * Invariants:
 * - Nothing here throws for a peer's failure: every request ends in a PeerReply, and the
 *   caller decides what a failure means (a lost hint is latency; a forwarded write whose
 *   request may have reached the writer has an unknown outcome).
 * - `neverSent` is true only when no connection existed, so a caller may treat such a
 *   write as surely not run; anything else (a reset, a timeout, an abort) may have come
 *   after the peer acted.
 * - Forwarded mutations and wake hints travel on one PeerChannel (a WebSocket) per peer,
 *   and over HTTP to a peer that refuses it; actions, announcements and probes are HTTP
 *   requests.
 */
export class PeerClient {
  private readonly fetch: typeof fetch;
  /** Peer sockets by the peer's base URL, least recently used first. */
  private readonly channels = new Map<string, PeerChannel>();
  /** Peers that refused the peer socket, until when (monotonic ms) HTTP is used instead. */
  private readonly refusedUntil = new Map<string, number>();
  private closed = false;
  private readonly clock: Clock;

  constructor(private readonly options: PeerClientOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.clock = options.clock ?? systemClock;
  }

  /** Closes the peer sockets; their waiting calls settle as abandoned. Requests still go out over HTTP. */
  close(): void {
    this.closed = true;
    for (const channel of this.channels.values()) channel.close();
    this.channels.clear();
  }

  /** Wake hints to one follower; true if it took them (on the peer socket: once the socket took them). */
  async sendHints(baseUrl: string, message: WakeHintsMessage, timeoutMs: number): Promise<boolean> {
    const body = wakeHintsBody(message);
    const onSocket = await this.onSocket(baseUrl, (channel) => channel.send(JSON.stringify(body), timeoutMs));
    const reply = onSocket ?? (await this.post(baseUrl, PEER_ROUTES.hint, body, AbortSignal.timeout(timeoutMs), false));
    return reply.kind === "answered" && reply.ok;
  }

  /** Tells the node at `baseUrl` that this one follows its shards. Best-effort. */
  async announce(baseUrl: string, self: Announcement): Promise<void> {
    await this.post(baseUrl, PEER_ROUTES.announce, self, AbortSignal.timeout(ANNOUNCE_TIMEOUT_MS), false);
  }

  /** Whether the node at `baseUrl` answers at all (`GET api/health`, any status): null if it does, else why not. */
  async probe(baseUrl: string): Promise<string | null> {
    try {
      const response = await this.fetch(new URL(PEER_ROUTES.health, baseUrl), { signal: AbortSignal.timeout(ANNOUNCE_TIMEOUT_MS) });
      await response.body?.cancel().catch(() => undefined);
      return null;
    } catch (error) {
      const reply = unanswered(error, false);
      return reply.kind === "unanswered" && reply.timedOut ? `no answer within ${ANNOUNCE_TIMEOUT_MS / 1000} s` : reply.kind === "unanswered" ? reply.reason : "unknown";
    }
  }

  /** A client's call forwarded to the shard's writer, ended by `timeoutMs` or by `abandoned`. */
  async forward(baseUrl: string, kind: ForwardedKind, call: ForwardedCall, timeoutMs: number, abandoned: AbortSignal): Promise<PeerReply> {
    const onSocket = kind === "mutation" ? await this.onSocket(baseUrl, (channel) => channel.call(call, timeoutMs, abandoned)) : null;
    return onSocket ?? this.post(baseUrl, PEER_ROUTES.forward(kind), call, AbortSignal.any([AbortSignal.timeout(timeoutMs), abandoned]), true, abandoned);
  }

  /**
   * Sends on the peer socket to `baseUrl`; null when it must go over HTTP instead: sockets
   * are off or closed, the peer refused one lately, or this socket did not open (never
   * sent: HTTP says what is wrong, or works through a proxy that passes no upgrades).
   */
  private async onSocket(baseUrl: string, send: (channel: PeerChannel) => Promise<ChannelReply>): Promise<PeerReply | null> {
    const channel = this.channelTo(baseUrl);
    if (channel === null) return null;
    const reply = await send(channel);
    if (reply.kind !== "unopened") return reply;
    if (reply.persistent) this.refusedUntil.set(baseUrl, this.clock.monotonicMs() + REFUSED_SOCKET_RETRY_MS);
    return null;
  }

  /** The peer socket to `baseUrl`, or null when mutations go over HTTP (sockets off or refused, or closed). */
  private channelTo(baseUrl: string): PeerChannel | null {
    if (this.closed || this.options.peerSockets === false) return null;
    const refusedUntil = this.refusedUntil.get(baseUrl);
    if (refusedUntil !== undefined) {
      if (this.clock.monotonicMs() < refusedUntil) return null;
      this.refusedUntil.delete(baseUrl);
    }
    let channel = this.channels.get(baseUrl);
    if (channel !== undefined) {
      this.channels.delete(baseUrl); // re-inserted: most recently used last
    } else {
      channel = new PeerChannel(baseUrl, this.options.adminKey, this.clock);
      if (this.channels.size >= PEER_CHANNELS_MAX) {
        const idle = [...this.channels].find(([, candidate]) => candidate.size === 0);
        if (idle !== undefined) {
          idle[1].close();
          this.channels.delete(idle[0]);
        }
      }
    }
    this.channels.set(baseUrl, channel);
    return channel;
  }

  private async post(baseUrl: string, route: string, message: unknown, signal: AbortSignal, readBody: boolean, abandoned?: AbortSignal): Promise<PeerReply> {
    let response: Response;
    try {
      response = await this.fetch(new URL(route, baseUrl), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Admin ${this.options.adminKey}` },
        body: JSON.stringify(message),
        signal,
      });
    } catch (error) {
      return unanswered(error, abandoned?.aborted === true);
    }
    if (!readBody) {
      await response.body?.cancel().catch(() => undefined);
      return { kind: "answered", status: response.status, ok: response.ok, body: undefined, bodyInvalid: false };
    }
    try {
      return { kind: "answered", status: response.status, ok: response.ok, body: await response.json(), bodyInvalid: false };
    } catch (error) {
      // The connection ended mid-body (a reset, our deadline) or the body was not JSON.
      if (signal.aborted) return unanswered(error, abandoned?.aborted === true);
      return { kind: "answered", status: response.status, ok: response.ok, body: undefined, bodyInvalid: true };
    }
  }
}

function unanswered(error: unknown, abandoned: boolean): PeerReply {
  const code = (error as { cause?: { code?: unknown } }).cause?.code;
  const neverSent = typeof code === "string" && NOT_CONNECTED_CODES.has(code);
  const timedOut = !abandoned && error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
  const described = typeof code === "string" ? code : error instanceof Error ? error.message : String(error);
  return { kind: "unanswered", neverSent, timedOut, abandoned, reason: `${neverSent ? "not reachable" : "connection lost"} (${described})` };
}
