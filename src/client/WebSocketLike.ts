/**
 * The part of the WebSocket API the client uses: the browser's WebSocket and the `ws`
 * package's both have it. Typed as this subset so that either can be passed.
 */
export interface WebSocketLike {
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { readonly data: unknown }) => void) | null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** A close code of our own choosing (RFC 6455 reserves 4000–4999 for applications). */
export const CLIENT_CLOSE_CODES = {
  /** The client closed on purpose (`close()`). */
  normal: 1000,
  /** The client's view of the session went wrong (version mismatch, bad frame): it reconnects. */
  resync: 4000,
} as const;
