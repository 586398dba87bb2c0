import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { MESSAGE_BYTES_MAX, NODE_SESSIONS_MAX, PING_INTERVAL_MS, CairnError, every, systemClock, type Clock, type Timer, ConditionWaiters, SERVER_DRAIN_MS_MAX } from "../base/index.js";
import { CLOSE_CODES, closeReason, encodeMessage, errorPayload, type SessionConnection, type SyncHandler } from "../sync/index.js";
import { PEER_ROUTES } from "../fleet/index.js";
import { PeerSockets } from "./PeerSockets.js";
import { aliveNow, pingSockets } from "./pingSockets.js";
import { sendError, type HttpApi } from "./HttpApi.js";
import type { FileStore } from "./FileStore.js";
import type { HttpActions } from "./HttpActions.js";
import { pathOf } from "./requestPath.js";
import { dashboardAsset, sendWebAsset, type WebAsset } from "./WebAssets.js";
import { CorsPolicy } from "./CorsPolicy.js";
import type { StaticFiles } from "./StaticFiles.js";

export interface CairnServerOptions {
  readonly handler: SyncHandler;
  readonly api: HttpApi;
  /** The app's HTTP actions (absent: none are served). */
  readonly httpActions?: HttpActions;
  /** Stored files: uploads and downloads under /api/storage/. */
  readonly files?: FileStore;
  readonly assets: ReadonlyMap<string, WebAsset>;
  /** The app's built files, for the paths no route of Cairn's takes (null: those are 404). */
  readonly staticFiles?: StaticFiles | null;
  /** Which other origins' pages may use the API, the client script and the sync socket (default: same-origin only). */
  readonly cors?: CorsPolicy;
  readonly log: (line: string) => void;
  readonly pingIntervalMs?: number;
  readonly clock?: Clock;
  /** Sessions held at once (default NODE_SESSIONS_MAX); an upgrade past it is refused with 503. */
  readonly sessionsMax?: number;
}

export interface ListenOptions {
  readonly port: number;
  readonly host: string;
}

/** Where the sync protocol is spoken. */
export const SYNC_PATH = "/api/sync";
/** Where other nodes open their peer sockets (admin key). */
const PEER_SOCKET_PATH = `/${PEER_ROUTES.peerSocket}`;
const SOCKET_CLOSE_WAIT_MS = 2_000;

/**
 * The node's network face: one HTTP server carrying the HTTP API, the app's HTTP actions
 * (under their path, `/http` by default), the built-in web assets,
 * the app's static files (behind every route of Cairn's, which they never shadow) and,
 * upgraded at /api/sync, the WebSocket sessions of the sync handler; upgraded at
 * /api/internal/peer-socket (admin key only), other nodes' peer sockets. The API, the
 * client script and the sync socket answer other origins' pages only as CorsPolicy allows.
 *
 * Lifecycle: listening --stop()--> stopping --> stopped. Stopping refuses new
 * connections, upgrades and requests (503), lets the HTTP requests already running finish
 * and their answers leave (a forwarded write waits for the writer and for this node's
 * tail), and beside them lets the sync handler drain its sessions' running requests and
 * end its sessions (FatalError SERVER_STOPPING, close 1001), both within
 * SERVER_DRAIN_MS_MAX; then it closes what is left, so no connection keeps the process.
 *
 * Liveness: every socket is pinged each `pingIntervalMs`; one that left PINGS_MISSED_MAX
 * pings in a row unanswered is terminated (its session closes with it).
 *
 * Client bytes never end the process: a request target that does not parse is answered
 * 400 (HTTP and upgrade alike), every socket has an 'error' listener from the moment it
 * is ours, and a throw out of a session's socket callbacks closes that session with
 * INTERNAL (its stack logged here), never reaching the event loop.
 */
export class CairnServer {
  private readonly http: Server;
  private readonly sockets = new WebSocketServer({ noServer: true, maxPayload: MESSAGE_BYTES_MAX });
  private readonly missedPings = new Map<WebSocket, number>();
  private readonly pinger: Timer;
  private state: "listening" | "stopping" | "stopped" = "listening";
  /** HTTP requests whose answer has not been sent completely yet. */
  private requestsRunning = 0;
  private readonly requestsSettled: ConditionWaiters;
  private readonly peerSockets: PeerSockets;
  private readonly cors: CorsPolicy;

  private constructor(
    private readonly options: CairnServerOptions,
    private readonly address: AddressInfo,
    http: Server,
  ) {
    this.http = http;
    this.cors = options.cors ?? new CorsPolicy([]);
    this.requestsSettled = new ConditionWaiters(options.clock ?? systemClock);
    this.peerSockets = new PeerSockets({ api: options.api, log: options.log, clock: options.clock ?? systemClock });
    this.pinger = every(options.clock ?? systemClock, options.pingIntervalMs ?? PING_INTERVAL_MS, () => this.pingAll());
  }

  static async listen(options: CairnServerOptions, where: ListenOptions): Promise<CairnServer> {
    const http = createServer();
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(where.port, where.host, () => {
        http.off("error", reject);
        resolve();
      });
    }).catch((error: NodeJS.ErrnoException) => {
      throw new CairnError("INVALID_ARGUMENT", `cannot listen on ${where.host}:${where.port}: ${error.code ?? error.message}`, { cause: error });
    });
    const server = new CairnServer(options, http.address() as AddressInfo, http);
    // After listening, an 'error' would be an accept that failed: log it and go on (libuv
    // absorbs EMFILE itself today; an unlistened 'error' would end the process).
    http.on("error", (error) => options.log(`http server error: ${error.message}`));
    http.on("request", (request, response) => {
      server.onRequest(request, response).catch((error: unknown) => {
        // Only a failure while answering an error gets here: drop the connection, not the process.
        options.log(`request failed while answering: ${(error as Error)?.stack ?? String(error)}`);
        response.destroy();
      });
    });
    http.on("upgrade", (request, socket: Duplex, head) => server.onUpgrade(request, socket, head));
    return server;
  }

  get port(): number {
    return this.address.port;
  }

  /** The URL to open in a browser. */
  get url(): string {
    const host = ["0.0.0.0", "::", "127.0.0.1", "::1"].includes(this.address.address) ? "localhost" : this.address.address;
    return `http://${host}:${this.address.port}/`;
  }

  async stop(): Promise<void> {
    if (this.state !== "listening") return;
    this.state = "stopping";
    this.pinger.cancel();
    const httpClosed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.http.closeIdleConnections();
    const requestsDone = this.requestsSettled.wait(() => this.requestsRunning === 0, SERVER_DRAIN_MS_MAX);
    await Promise.all([requestsDone, this.options.handler.close(), this.peerSockets.drain(SERVER_DRAIN_MS_MAX)]);
    await this.socketsClosed();
    for (const socket of this.sockets.clients) socket.terminate();
    this.peerSockets.terminate();
    this.http.closeAllConnections();
    await httpClosed;
    this.state = "stopped";
  }

  private async onRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    this.requestsRunning++;
    // Settled when the answer was sent, or the connection ended without it.
    response.once("close", () => {
      this.requestsRunning--;
      this.requestsSettled.notify();
    });
    // The connection is not kept for another request once the server stops.
    if (this.state !== "listening") response.shouldKeepAlive = false;
    try {
      if (this.state !== "listening") throw new CairnError("SERVER_STOPPING", "the server is stopping");
      const path = pathOf(request.url);
      if (path === null) throw new CairnError("PROTOCOL_INVALID", "the request target is not a valid URL path");
      // A refused origin's request is answered here, before anything runs.
      if (CorsPolicy.governs(path) && !this.cors.admit(request, response)) return;
      if (this.options.files !== undefined && (await this.options.files.handle(request, response, path))) return;
      if (await this.options.api.handle(request, response, path)) return;
      if (this.options.httpActions !== undefined && (await this.options.httpActions.handle(request, response, path))) return;
      const asset = this.options.assets.get(path) ?? (await dashboardAsset(path));
      if (asset !== undefined) return sendWebAsset(request, response, asset);
      if (this.options.staticFiles != null) return await this.options.staticFiles.serve(request, response, path);
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
      response.end(`not found: ${path}\n`);
    } catch (error) {
      sendError(response, error, this.options.log);
    }
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Node hands an upgraded socket over without its own 'error' listener: a reset
    // before the handshake ends would otherwise be an uncaught 'error' event.
    socket.on("error", (error) => this.options.log(`sync upgrade socket error: ${error.message}`));
    const path = pathOf(request.url);
    if (path === PEER_SOCKET_PATH) return this.onPeerSocket(request, socket, head);
    const full = this.missedPings.size >= (this.options.sessionsMax ?? NODE_SESSIONS_MAX);
    const refusal =
      path === null
        ? "400 Bad Request"
        : path !== SYNC_PATH
          ? "404 Not Found"
          : // Browsers apply no CORS to WebSockets: a page of a refused origin is turned away here.
            !this.cors.admitsSocket(request)
            ? "403 Forbidden"
            : this.state !== "listening" || full
              ? "503 Service Unavailable"
              : null;
    if (refusal !== null) return refuseUpgrade(socket, refusal);
    try {
      this.sockets.handleUpgrade(request, socket, head, (ws) => this.onSocket(ws));
    } catch (error) {
      this.options.log(`sync upgrade failed: ${(error as Error)?.stack ?? String(error)}`);
      socket.destroy();
    }
  }

  /** Another node's peer socket: admin key only, and not while stopping. */
  private onPeerSocket(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!this.options.api.isAdmin(request)) return refuseUpgrade(socket, "403 Forbidden");
    if (this.state !== "listening") return refuseUpgrade(socket, "503 Service Unavailable");
    try {
      this.peerSockets.upgrade(request, socket, head);
    } catch (error) {
      this.options.log(`peer socket upgrade failed: ${(error as Error)?.stack ?? String(error)}`);
      socket.destroy();
    }
  }

  private onSocket(ws: WebSocket): void {
    ws.on("error", (error) => this.options.log(`sync socket error: ${error.message}`));
    const connection = this.options.handler.connect({
      send: (text, written) => ws.send(text, (error) => written(error ?? undefined)),
      close: (code, reason) => ws.close(code, closeReason(reason)),
      terminate: () => ws.terminate(),
    });
    this.missedPings.set(ws, 0);
    ws.on("pong", () => aliveNow(this.missedPings, ws));
    ws.on("message", (data, isBinary) =>
      this.guarded(ws, connection, () => {
        aliveNow(this.missedPings, ws);
        if (isBinary) {
          const error = new CairnError("PROTOCOL_INVALID", "frames must be text (JSON), not binary");
          ws.send(encodeMessage({ type: "ProtocolError", error: errorPayload(error) }));
          return;
        }
        connection.receive(data.toString());
      }),
    );
    ws.on("close", () =>
      this.guarded(ws, connection, () => {
        this.missedPings.delete(ws);
        connection.closed();
      }),
    );
  }

  /**
   * Runs a socket callback; a throw (a bug: the session's own handling never throws)
   * is logged with its stack and ends that one session, not the process.
   */
  private guarded(ws: WebSocket, connection: SessionConnection, callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.options.log(`sync session failed: ${(error as Error)?.stack ?? String(error)}`);
      this.missedPings.delete(ws);
      try {
        connection.closed();
      } catch (closing) {
        this.options.log(`sync session failed while closing: ${(closing as Error)?.stack ?? String(closing)}`);
      }
      const failed = new CairnError("INTERNAL", "the server failed to handle this session");
      ws.send(encodeMessage({ type: "FatalError", error: errorPayload(failed) }), () => undefined);
      ws.close(CLOSE_CODES.internalError, "internal error");
    }
  }

  private pingAll(): void {
    this.peerSockets.pingAll();
    pingSockets(this.missedPings, (ws, missed) => {
      this.options.log(`sync socket closed: ${missed} pings unanswered`);
      ws.close(CLOSE_CODES.unresponsive, "unresponsive");
      ws.terminate();
    });
  }

  private async socketsClosed(): Promise<void> {
    const clock = this.options.clock ?? systemClock;
    const deadline = clock.monotonicMs() + SOCKET_CLOSE_WAIT_MS;
    while (this.sockets.clients.size > 0 && clock.monotonicMs() < deadline) await clock.sleep(20);
  }
}

/** Answers an upgrade with an HTTP status instead of 101 and ends the socket. */
function refuseUpgrade(socket: Duplex, status: string): void {
  // Nobody reads this socket, so the client's FIN would never be seen and it would
  // stay open (a file descriptor per refused upgrade, and a stop that waits on it).
  socket.once("finish", () => socket.destroy());
  socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
}
