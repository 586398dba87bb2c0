import { createServer, type Server } from "node:http";
import { CairnError } from "../base/index.js";
import { sendError, sendJson } from "./HttpApi.js";

/**
 * What answers on a node's port while the node serves nothing (its layout was retired by
 * a reshard and re-opening on the new one failed): `GET /api/health` says
 * `status: "stopped"` and why, every other request fails with DEPLOYMENT_RESHARDED, and
 * WebSocket upgrades are refused. So operators and load balancers see why the node is
 * out, rather than a refused connection.
 */
export class StoppedNodeServer {
  private constructor(private readonly http: Server) {}

  static async listen(where: { readonly port: number; readonly host: string }, status: () => { readonly nodeId: string; readonly reason: string }): Promise<StoppedNodeServer> {
    const http = createServer((request, response) => {
      const { nodeId, reason } = status();
      if (request.method === "GET" && request.url?.split("?")[0] === "/api/health") {
        sendJson(response, 503, { status: "stopped", reason, nodeId });
        return;
      }
      sendError(response, new CairnError("DEPLOYMENT_RESHARDED", `${reason}; this node serves nothing until it re-opens on the new layout`));
    });
    http.on("upgrade", (_request, socket) => socket.end("HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"));
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(where.port, where.host, () => {
        http.off("error", reject);
        resolve();
      });
    });
    return new StoppedNodeServer(http);
  }

  async close(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
