import WebSocket from "ws";
import { type Clock, MESSAGE_BYTES_MAX } from "../base/index.js";
import { PEER_SOCKET_CALLS_MAX, forwardAnswerFrameSchema, type ForwardedCall, PEER_ROUTES } from "./peerMessages.js";
import type { PeerReply } from "./PeerClient.js";

/**
 * How a call on the channel ended: the writer's answer or a transport failure (PeerReply),
 * or `unopened`: it was never sent because the socket did not open — refused with an HTTP
 * status, or the connection failed before the handshake ended (a proxy between the nodes
 * that does not pass upgrades, or the writer is down). The caller sends it over HTTP,
 * whose answer says which; `persistent` when the writer (or what sits in front of it)
 * answered but did not take the socket, so trying again at once would fail the same way.
 */
export type ChannelReply = PeerReply | { readonly kind: "unopened"; readonly reason: string; readonly persistent: boolean };

/**
 * How long the socket's opening handshake may take. Something between the nodes that
 * takes the upgrade request but never answers it (a proxy that passes no upgrades) must
 * not hold forwarded calls for their whole timeout: they go over HTTP after this.
 */
const HANDSHAKE_TIMEOUT_MS = 3_000;

/** Connection errors that mean the socket never reached a server. */
const NOT_CONNECTED_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT"]);

interface Waiter {
  readonly id: number;
  readonly frame: string;
  /** The open socket it was written to (the writer may have run it); null while it is queued. */
  sentOn: WebSocket | null;
  /** A frame nobody answers (hints): it settles once written to the socket. */
  readonly oneway: boolean;
  readonly settle: (reply: ChannelReply) => void;
}

/** How a one-way frame that was written settles: the socket took it (what the peer does with it is not known). */
const WRITTEN: PeerReply = { kind: "answered", status: 200, ok: true, body: undefined, bodyInvalid: false };

/**
 * One node's peer socket to another (`{base}api/internal/peer-socket`, DESIGN.md §9):
 * forwarded mutations go out as frames `{id, call}` on one WebSocket and their answers
 * come back by id in whatever order they finish, and wake hints go out as frames
 * `{hints}` that nobody answers, so a forwarded mutation or a hint costs a frame at each
 * end instead of an HTTP request.
 *
 * Lifecycle: idle → connecting (calls queue) → open (calls are written at once) → idle
 * again when the socket closes or fails; the next call opens a new one. `close` is final.
 *
 * Invariants:
 * - Every call settles exactly once: answered, timed out, abandoned, or failed with the
 *   socket. Nothing here throws for the writer's failure.
 * - `neverSent` is true only for a call that was never written to a socket (it was queued
 *   while the socket failed to open, or timed out or was abandoned before it opened): the
 *   writer surely did not see it. A call written to an open socket that then closed has an
 *   unknown outcome, like a request whose connection was reset.
 * - A socket that does not open (an HTTP status instead of 101 — an older node, a
 *   stopping one, a wrong key — or a connection that fails first) settles the queued
 *   calls as `unopened`: never sent, so the caller sends them over HTTP, whose answer
 *   says what is wrong.
 * - At most PEER_SOCKET_CALLS_MAX calls wait at once; more fail at once as never sent.
 */
export class PeerChannel {
  private socket: WebSocket | null = null;
  private open = false;
  private closed = false;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiter>();

  constructor(
    private readonly baseUrl: string,
    private readonly adminKey: string,
    private readonly clock: Clock,
  ) {}

  /** Calls waiting for an answer (sent or queued). */
  get size(): number {
    return this.waiting.size;
  }

  /** A forwarded call: settles with the writer's answer, or how it failed. */
  call(call: ForwardedCall, timeoutMs: number, abandoned: AbortSignal): Promise<ChannelReply> {
    return this.enqueue((id) => JSON.stringify({ id, call }), false, timeoutMs, abandoned);
  }

  /** A frame nobody answers (`{hints}`): settles once the socket took it, or how that failed. */
  send(frame: string, timeoutMs: number): Promise<ChannelReply> {
    return this.enqueue(() => frame, true, timeoutMs, NEVER_ABANDONED);
  }

  private enqueue(frameOf: (id: number) => string, oneway: boolean, timeoutMs: number, abandoned: AbortSignal): Promise<ChannelReply> {
    if (this.closed || abandoned.aborted) return Promise.resolve(failure(abandoned.aborted, false, "this node is closing its peer connections", true));
    if (this.waiting.size >= PEER_SOCKET_CALLS_MAX) return Promise.resolve(failure(false, false, `${PEER_SOCKET_CALLS_MAX} frames already wait on this peer socket`, true));
    return new Promise((resolve) => {
      const id = this.nextId++;
      const onAbort = () => this.end(id, (waiter) => failure(true, false, "abandoned", waiter.sentOn === null));
      const timer = this.clock.setTimer(timeoutMs, () => this.end(id, (waiter) => failure(false, true, `no answer within ${timeoutMs / 1000} s`, waiter.sentOn === null)));
      const waiter: Waiter = {
        id,
        frame: frameOf(id),
        sentOn: null,
        oneway,
        settle: (reply) => {
          timer.cancel();
          abandoned.removeEventListener("abort", onAbort);
          resolve(reply);
        },
      };
      abandoned.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(id, waiter);
      if (this.open && this.socket !== null) this.write(this.socket, waiter);
      else this.connect();
    });
  }

  /** Ends the channel: the socket closes and every waiting call settles (abandoned). */
  close(): void {
    this.closed = true;
    this.failWhere(() => true, (waiter) => failure(true, false, "this node is closing its peer connections", waiter.sentOn === null));
    this.socket?.terminate();
    this.socket = null;
    this.open = false;
  }

  private connect(): void {
    if (this.socket !== null || this.closed) return;
    const url = new URL(PEER_ROUTES.peerSocket, this.baseUrl);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    let socket: WebSocket;
    try {
      socket = new WebSocket(url, { headers: { authorization: `Admin ${this.adminKey}` }, maxPayload: MESSAGE_BYTES_MAX, perMessageDeflate: false, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    } catch (error) {
      this.failWhere((waiter) => waiter.sentOn === null, () => ({ kind: "unopened", reason: describe(error), persistent: true }));
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.on("open", () => {
      opened = true;
      if (this.socket !== socket) return;
      this.open = true;
      for (const waiter of this.waiting.values()) if (waiter.sentOn === null) this.write(socket, waiter);
    });
    socket.on("unexpected-response", (request, response) => {
      response.resume();
      request.destroy();
      // Nothing was written to a socket that never opened: the queued calls go over HTTP.
      if (this.dropSocket(socket)) this.failWhere((waiter) => waiter.sentOn === null, () => ({ kind: "unopened", reason: `the upgrade was answered HTTP ${response.statusCode}`, persistent: true }));
    });
    socket.on("message", (data) => this.receive(socket, data.toString()));
    // 'error' is followed by 'close'; whichever comes first settles the socket's calls.
    const ended = (reason: string, reachable: boolean) => {
      if (this.dropSocket(socket) && !opened) this.failWhere((waiter) => waiter.sentOn === null, () => ({ kind: "unopened", reason, persistent: reachable }));
      this.failWhere((waiter) => waiter.sentOn === socket, () => failure(false, false, `connection lost (${reason})`, false));
    };
    socket.on("error", (error) => {
      const code = (error as NodeJS.ErrnoException).code;
      ended(describe(error), !(typeof code === "string" && NOT_CONNECTED_CODES.has(code)));
    });
    socket.on("close", (code) => ended(`socket closed with ${code}`, true));
  }

  private write(socket: WebSocket, waiter: Waiter): void {
    waiter.sentOn = socket;
    if (!waiter.oneway) return socket.send(waiter.frame);
    socket.send(waiter.frame, (error) => this.end(waiter.id, () => (error === undefined || error === null ? WRITTEN : failure(false, false, `connection lost (${describe(error)})`, false))));
  }

  private receive(socket: WebSocket, text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const frame = forwardAnswerFrameSchema.safeParse(parsed);
    // A frame that is not an answer: the calls on this socket get unknown outcomes (close).
    if (!frame.success) {
      socket.terminate();
      return;
    }
    const { id, status, body } = frame.data;
    if (this.waiting.get(id)?.sentOn !== socket) return; // not a call of this socket's
    this.end(id, () => ({ kind: "answered", status, ok: status >= 200 && status < 300, body, bodyInvalid: body === undefined }));
  }

  private end(id: number, reply: (waiter: Waiter) => ChannelReply): void {
    const waiter = this.waiting.get(id);
    if (waiter === undefined) return;
    this.waiting.delete(id);
    waiter.settle(reply(waiter));
  }

  private failWhere(which: (waiter: Waiter) => boolean, reply: (waiter: Waiter) => ChannelReply): void {
    for (const waiter of [...this.waiting.values()]) if (which(waiter)) this.end(waiter.id, reply);
  }

  /** Forgets `socket` if it is the current one (true), so the next call opens another. */
  private dropSocket(socket: WebSocket): boolean {
    if (this.socket !== socket) return false;
    this.socket = null;
    this.open = false;
    return true;
  }
}

/** A signal that never aborts (one-way frames are not abandoned, only timed out). */
const NEVER_ABANDONED = new AbortController().signal;

function failure(abandoned: boolean, timedOut: boolean, reason: string, neverSent: boolean): PeerReply {
  return { kind: "unanswered", neverSent, timedOut, abandoned, reason };
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : error instanceof Error ? error.message : String(error);
}
