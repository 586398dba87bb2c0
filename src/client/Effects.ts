import type { ClientMessage } from "../sync/protocol.js";

/**
 * What the client state machine asks its driver to do, collected since the driver last
 * took them: send these frames (in order), then run these callbacks (listeners and
 * promise settlements, in order), then resync if asked. The state machine never touches
 * a socket or calls user code itself, so tests read its decisions as plain data.
 */
export interface Effects {
  readonly send: ClientMessage[];
  readonly callbacks: (() => void)[];
  /** Why the session must be rebuilt (close the socket, reconnect); null when it need not be. */
  resync: string | null;
  /** Call `resendBackedOff` after this many ms (mutations wait to be re-sent); null: nothing waits. */
  resendAfterMs: number | null;
}

export function noEffects(): Effects {
  return { send: [], callbacks: [], resync: null, resendAfterMs: null };
}
