import { once } from "node:events";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

/**
 * A WebSocket relay between clients and a node, frame by frame, that a test can break
 * the ways a network does: `cut` drops every connection and refuses new ones (the server
 * is unreachable), `muteReplies` keeps carrying the client's frames to the node but
 * drops the node's answers (an ack lost on the way back), all or those of some types.
 */
export class OutboxRelay {
  private refusing = false;
  /** Which of the node's frames are dropped (by their text); null: none. */
  private muted: ((frame: string) => boolean) | null = null;
  private readonly pairs = new Set<{ readonly client: WebSocket; readonly node: WebSocket }>();

  private constructor(
    private readonly wss: WebSocketServer,
    private readonly nodeUrl: string,
  ) {
    wss.on("connection", (client) => this.relay(client));
  }

  static async start(nodeUrl: string): Promise<OutboxRelay> {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await once(wss, "listening");
    return new OutboxRelay(wss, nodeUrl);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/api/sync`;
  }

  /** Drops every connection; until `restore`, new ones are dropped at once. */
  cut(): void {
    this.refusing = true;
    for (const pair of this.pairs) this.drop(pair);
  }

  restore(): void {
    this.refusing = false;
    this.muted = null;
  }

  /** The node's frames (of `types` only, when given) are dropped from now on (the client's still reach it). */
  muteReplies(types?: readonly string[]): void {
    this.muted = types === undefined ? () => true : (frame) => types.includes((JSON.parse(frame) as { type: string }).type);
  }

  async close(): Promise<void> {
    this.cut();
    this.wss.close();
    await once(this.wss, "close");
  }

  private relay(client: WebSocket): void {
    if (this.refusing) {
      client.terminate();
      return;
    }
    const node = new WebSocket(this.nodeUrl);
    const pair = { client, node };
    this.pairs.add(pair);
    const early: string[] = [];
    client.on("message", (data) => {
      if (node.readyState === WebSocket.OPEN) node.send(String(data));
      else early.push(String(data));
    });
    node.on("open", () => {
      for (const frame of early.splice(0)) node.send(frame);
    });
    node.on("message", (data) => {
      if (this.muted?.(String(data)) !== true && client.readyState === WebSocket.OPEN) client.send(String(data));
    });
    const end = () => this.drop(pair);
    client.on("close", end);
    node.on("close", end);
    client.on("error", end);
    node.on("error", end);
  }

  private drop(pair: { readonly client: WebSocket; readonly node: WebSocket }): void {
    this.pairs.delete(pair);
    pair.client.terminate();
    pair.node.terminate();
  }
}
