import type { Value } from "../model/Value.js";
import type { JsonValue } from "../model/ValueJson.js";
import type { ClientMessage } from "../sync/protocol.js";

/**
 * The client's actions that have not been answered. An action may have effects outside
 * the database and is not idempotent, so it is never re-sent:
 *
 *   status    event                             next
 *   waiting   sent (after ConnectAck, within the in-flight bound)  inFlight
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

  /** The actions waiting to be sent, in the order they were made. */
  waiting(): PendingAction[] {
    return [...this.byRequestId.values()].filter((action) => action.status === "waiting");
  }

  inFlightCount(): number {
    let count = 0;
    for (const action of this.byRequestId.values()) if (action.status === "inFlight") count++;
    return count;
  }

  /** The frame of a waiting action; it is in flight now. */
  send(action: PendingAction): ActionFrame {
    action.status = "inFlight";
    return { type: "Action", requestId: action.requestId, path: action.path, args: action.args };
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
