import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { CairnError, type Clock, ConditionWaiters, hasErrorCode, MESSAGE_BYTES_MAX } from "../base/index.js";
import { PEER_SOCKET_CALLS_MAX, forwardFrameSchema, type ForwardAnswerFrame } from "../fleet/index.js";
import { errorAnswer, type HttpApi } from "./HttpApi.js";
import { aliveNow, pingSockets } from "./pingSockets.js";

export interface PeerSocketsOptions {
  /** Runs each forwarded mutation as its HTTP route would, and says whether an upgrade carries the admin key. */
  readonly api: HttpApi;
  readonly log: (line: string) => void;
  readonly clock: Clock;
}

/** WebSocket close code for a peer that sent a frame that is not a forward frame (RFC 6455 policy violation). */
const POLICY_VIOLATION = 1008;
/** WebSocket close code when this node stops (going away). */
const GOING_AWAY = 1001;

/**
 * The receiving end of the peer sockets (DESIGN.md §9; the sender's end is
 * fleet/PeerChannel): other nodes' forwarded mutations arrive as frames `{id, call}`,
 * each runs as the HTTP route `api/internal/forward/mutation` would run it, and its
 * answer goes back as `{id, status, body}` as soon as it is ready, in any order; wake
 * hints arrive as frames `{hints}` and are taken as the HTTP route takes them, with no
 * answer (a node that takes no hints drops them: hints are best-effort).
 *
 * Invariants:
 * - Only a peer with the admin key gets a socket (CairnServer checks the upgrade).
 * - A call that is not valid is answered (PROTOCOL_INVALID, by its id); a frame that is
 *   neither a forward frame nor valid hints closes that socket (1008), whose other calls'
 *   answers are then lost (the sender re-routes them with their receipt keys).
 * - At most PEER_SOCKET_CALLS_MAX calls of one socket run at once: more are answered
 *   SESSION_OVERLOADED without running.
 * - Stopping (`drain`): calls that arrive are answered SERVER_STOPPING (the sender
 *   re-routes them); those running finish and their answers leave (bounded), then the
 *   sockets close.
 */
export class PeerSockets {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: MESSAGE_BYTES_MAX, perMessageDeflate: false });
  private readonly missedPings = new Map<WebSocket, number>();
  private running = 0;
  private stopping = false;
  private readonly settled: ConditionWaiters;

  constructor(private readonly options: PeerSocketsOptions) {
    this.settled = new ConditionWaiters(options.clock);
  }

  /** Open peer sockets. */
  get size(): number {
    return this.missedPings.size;
  }

  /** Takes over an upgrade request the server judged to be a peer socket's, with the admin key. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.server.handleUpgrade(request, socket, head, (ws) => this.accept(ws));
  }

  /** Pings every socket; terminates one that left PINGS_MISSED_MAX pings unanswered. */
  pingAll(): void {
    pingSockets(this.missedPings, (ws, missed) => {
      this.options.log(`peer socket closed: ${missed} pings unanswered`);
      ws.terminate();
    });
  }

  /** Stops taking calls, lets the running ones answer (within `timeoutMs`), then closes every socket. */
  async drain(timeoutMs: number): Promise<void> {
    this.stopping = true;
    await this.settled.wait(() => this.running === 0, timeoutMs);
    for (const ws of this.missedPings.keys()) ws.close(GOING_AWAY, "the node is stopping");
  }

  /** Ends what is left after drain. */
  terminate(): void {
    for (const ws of this.missedPings.keys()) ws.terminate();
    this.missedPings.clear();
  }

  private accept(ws: WebSocket): void {
    let running = 0;
    this.missedPings.set(ws, 0);
    ws.on("error", (error) => this.options.log(`peer socket error: ${error.message}`));
    ws.on("pong", () => aliveNow(this.missedPings, ws));
    ws.on("close", () => this.missedPings.delete(ws));
    const refuse = (why: string) => {
      this.options.log(`peer socket closed: ${why}`);
      ws.close(POLICY_VIOLATION, "not a peer frame");
    };
    ws.on("message", (data, isBinary) => {
      aliveNow(this.missedPings, ws);
      const parsed = isBinary ? undefined : parseJson(data.toString());
      if (typeof parsed === "object" && parsed !== null && "hints" in parsed) {
        try {
          this.options.api.takeHints(parsed);
        } catch (error) {
          if (!hasErrorCode(error, "FUNCTION_NOT_FOUND")) refuse(`invalid hints: ${(error as Error).message}`);
        }
        return;
      }
      const checked = forwardFrameSchema.safeParse(parsed);
      if (!checked.success) return refuse("a frame that is neither a forward frame nor hints");
      const frame = checked.data;
      const answer = (reply: Omit<ForwardAnswerFrame, "id">) => ws.send(JSON.stringify({ id: frame.id, ...reply }), () => undefined);
      if (this.stopping) return answer(errorAnswer(new CairnError("SERVER_STOPPING", "the server is stopping")));
      if (running >= PEER_SOCKET_CALLS_MAX) {
        return answer(errorAnswer(new CairnError("SESSION_OVERLOADED", `${PEER_SOCKET_CALLS_MAX} forwarded calls already run for this socket; nothing was run`)));
      }
      running++;
      this.running++;
      void this.options.api.answerForwarded("mutation", frame.call).then(answer).finally(() => {
        running--;
        this.running--;
        this.settled.notify();
      });
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
