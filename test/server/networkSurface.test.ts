/**
 * Scenarios: a real node in a child process gets client bytes that used to end it — an
 * upgrade request whose target does not parse (`GET //[` with `Upgrade: websocket`), the
 * same target as a plain HTTP request, a first frame whose validation message echoes
 * 100 multi-byte characters (a close reason over 123 bytes made `ws` throw), and
 * connections reset in the middle of an upgrade, refused upgrades followed by bytes
 * nobody reads (their sockets stayed open for good, and a stop waited on them).
 * Each is answered (400, a close reason of at most 123 bytes, nothing), no socket is left
 * open, and the process stays alive and keeps serving.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { eventually } from "../support/Gate.js";
import { ProbedServer } from "./ProbedServer.js";
import { SocketClient } from "./serverHarness.js";

const servers: ProbedServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function server(): Promise<ProbedServer> {
  const started = await ProbedServer.start();
  servers.push(started);
  return started;
}

/**
 * Sends raw bytes and returns what the server answered once the connection closed;
 * `halfClose`: the client ends its side right after the request, as a one-shot client does.
 */
function rawExchange(url: string, bytes: string, halfClose = false): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes);
      if (halfClose) socket.end();
    });
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString();
      if (!halfClose && answer.includes("\r\n\r\n")) socket.destroy();
    });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

const upgradeHeaders = "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

/** The server still answers health and keeps a live query updating. */
async function stillServes(probed: ProbedServer): Promise<void> {
  expect(probed.alive, probed.log).toBe(true);
  expect((await fetch(new URL("/api/health", probed.url))).status).toBe(200);
  const client = await SocketClient.open(probed.url);
  try {
    client.write({ type: "Connect", sessionId: "after" });
    client.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "alive" } }], remove: [] });
    await client.next((m) => m.type === "Transition");
    client.write({ type: "Mutation", requestId: 1, path: "notes:add", args: { channel: "alive", body: "still here" } });
    const update = await client.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && (mod.value as unknown[]).length > 0));
    expect(update).toMatchObject({ modifications: [{ type: "QueryUpdated", value: expect.arrayContaining(["still here"]) }] });
  } finally {
    client.close();
  }
}

describe("the network surface", () => {
  it("answers 400 to an upgrade and a request whose target does not parse, and stays up", async () => {
    const probed = await server();
    expect(await rawExchange(probed.url, `GET //[ HTTP/1.1\r\n${upgradeHeaders}`)).toMatch(/^HTTP\/1\.1 400 /);
    expect(await rawExchange(probed.url, "GET //[ HTTP/1.1\r\nHost: x\r\n\r\n")).toMatch(/^HTTP\/1\.1 400 [^]*PROTOCOL_INVALID/);
    expect(await rawExchange(probed.url, `GET /api/sync HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n`)).toMatch(/^HTTP\/1\.1 400 /);
    await stillServes(probed);
  });

  it("cuts a close reason that echoes multi-byte client text to 123 bytes, and stays up", async () => {
    const probed = await server();
    const socket = new WebSocket(`${probed.url.replace(/^http/, "ws")}api/sync`);
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    const closed = new Promise<{ code: number; reason: Buffer }>((resolve) => socket.once("close", (code, reason) => resolve({ code, reason })));
    // An unknown key is named in the validation message, so the message carries 300 bytes of it.
    socket.send(JSON.stringify({ type: "Connect", sessionId: "s", ["€".repeat(100)]: 1 }));
    const { code, reason } = await closed;
    expect(code).toBe(4400);
    expect(reason.byteLength).toBeGreaterThan(0);
    expect(reason.byteLength).toBeLessThanOrEqual(123);
    expect(() => new TextDecoder("utf-8", { fatal: true }).decode(reason)).not.toThrow();
    await stillServes(probed);
  });

  it("survives connections reset in the middle of an upgrade", async () => {
    const probed = await server();
    const { hostname, port } = new URL(probed.url);
    for (const target of ["/api/sync", "/nowhere"]) {
      for (let attempt = 0; attempt < 20; attempt++) {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), hostname, () => {
            socket.write(`GET ${target} HTTP/1.1\r\n${upgradeHeaders}`);
            socket.resetAndDestroy();
          });
          socket.on("close", () => resolve());
          socket.on("error", () => undefined);
        });
      }
    }
    await stillServes(probed);
  });

  it("leaves no socket open for upgrades it refused", async () => {
    const probed = await server();
    const before = probed.openSockets();
    for (let attempt = 0; attempt < 20; attempt++) {
      // Bytes after the request (more than a socket reads ahead) that nobody will read.
      const unread = "x".repeat(256 * 1024);
      expect(await rawExchange(probed.url, `GET ${attempt % 2 === 0 ? "/nowhere" : "//["} HTTP/1.1\r\n${upgradeHeaders}${unread}`, true)).toMatch(/^HTTP\/1\.1 (404|400) /);
    }
    await eventually(() => probed.openSockets() <= before + 2);
    await stillServes(probed);
  });
});
