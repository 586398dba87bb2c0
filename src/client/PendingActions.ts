import type { Value } from "../model/Value.js";
import type { JsonValue } from "../model/ValueJson.js";
import type { ClientMessage } from "../sync/protocol.js";

/**
 * The client's actions that have not been answered. An action may have effects outside
 * the database and is not idempotent, so it is never re-sent:
 *
 *   status    event                             next
 *   waiting   sent (connected, after ConnectAck) inFlight
 *   inFlight  ActionResponse, ProtocolError     (settled, removed)
 *   inFlight  connection lost                   (rejected with CONNECTION_LOST, removed)
 *
 * An action made while disconnected waits and goes out after the next ConnectAck.
 */

export interface PendingAction {
  readonly requestId: number;
  readonly path: string;
  readonly args: JsonValue;
  status: "waiting" | "inFlight";
  readonly resolve: (value: Value) => void;
  readonly reject: (error: unknown) => void;
}

type ActionFrame = Extract<ClientMessage, { type: "Action" }>;

export class PendingActions {
  private readonly byRequestId = new Map<number, PendingAction>();

  create(requestId: number, path: string, args: JsonValue): Promise<Value> {
    return new Promise<Value>((resolve, reject) => {
      this.byRequestId.set(requestId, { requestId, path, args, status: "waiting", resolve, reject });
    });
  }

  /** The frames of every waiting action; they are in flight now. */
  sendWaiting(): ActionFrame[] {
    const frames: ActionFrame[] = [];
    for (const action of this.byRequestId.values()) {
      if (action.status !== "waiting") continue;
      action.status = "inFlight";
      frames.push({ type: "Action", requestId: action.requestId, path: action.path, args: action.args });
    }
    return frames;
  }

  /** Removes and returns the action answered by this requestId. */
  take(requestId: number): PendingAction | undefined {
    const action = this.byRequestId.get(requestId);
    if (action !== undefined) this.byRequestId.delete(requestId);
    return action;
  }

  /** Removes and returns the actions in flight: their answers can no longer arrive. */
  takeInFlight(): PendingAction[] {
    const lost = [...this.byRequestId.values()].filter((action) => action.status === "inFlight");
    for (const action of lost) this.byRequestId.delete(action.requestId);
    return lost;
  }

  takeAll(): PendingAction[] {
    const all = [...this.byRequestId.values()];
    this.byRequestId.clear();
    return all;
  }
}
