/**
 * Scenarios: a writer node in this process, reached over real sockets (WebSocket and the
 * HTTP API), with JWT auth. Receipts belong to the identity that wrote them: another
 * identity naming the same (clientId, seq) learns nothing of the result and runs nothing
 * (RECEIPT_IDENTITY_MISMATCH), a Connect of another identity is not told the seq is known,
 * and the owner re-sending it is answered from the receipt. A client's ackedThrough sets
 * its floor: a re-send of an acknowledged seq is refused (MUTATION_SEQ_BELOW_FLOOR),
 * never applied a second time, and an ackedThrough that is not below the seq is bad input.
 */
import { SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { jwtVerifier } from "../../src/server/JwtVerifier.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import { SocketClient, startTestNode } from "./serverHarness.js";

const SECRET = "a-test-secret-that-is-long-enough-for-hs256";
const cleanups: (() => Promise<void>)[] = [];
let sessions = 0;
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function node() {
  const started = await startTestNode({ verifier: jwtVerifier({ secret: SECRET }) });
  cleanups.push(() => started.close());
  return started.node;
}

function tokenFor(subject: string): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(subject).setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
}

/** A session over a real socket, connected, and authenticated as `subject` (null: anonymous). */
async function session(url: string, subject: string | null, connect: { clientId?: string; held?: number[] } = {}) {
  const client = await SocketClient.open(url);
  cleanups.push(async () => client.close());
  client.write({ type: "Connect", sessionId: `s-${subject ?? "anonymous"}-${++sessions}`, ...connect });
  const ack = await client.next((m) => m.type === "ConnectAck");
  if (subject !== null) {
    client.write({ type: "SetAuth", token: await tokenFor(subject) });
    expect(await client.next((m) => m.type === "AuthResponse")).toMatchObject({ success: true, subject });
  }
  let requestId = 0;
  return {
    ack,
    async mutate(args: { clientId: string; seq: number; ackedThrough?: number }, name = "shared"): Promise<Extract<ServerMessage, { type: "MutationResponse" }>> {
      const id = ++requestId;
      client.write({ type: "Mutation", requestId: id, path: "counters:bump", args: { name }, ...args });
      return (await client.next((m) => m.type === "MutationResponse" && m.requestId === id)) as Extract<ServerMessage, { type: "MutationResponse" }>;
    },
  };
}

async function post(url: string, path: string, body: unknown, token?: string) {
  const headers: Record<string, string> = { "content-type": "application/json", ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(new URL(path, url), { method: "POST", headers, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function counter(url: string, name = "shared"): Promise<unknown> {
  return (await post(url, "/api/query", { path: "counters:get", args: { name } })).body.value;
}

describe("receipts bound to their identity", () => {
  it("tells another identity nothing of a receipt and runs nothing under its key; the owner's re-send is answered from it", async () => {
    const server = await node();
    const ada = await session(server.url, "ada");
    expect(await ada.mutate({ clientId: "phone-of-ada", seq: 1 })).toMatchObject({ success: true, value: 1 });

    // Eve names Ada's clientId and seq, over WebSocket and over HTTP: refused, nothing told, nothing run.
    const eve = await session(server.url, "eve");
    const refused = await eve.mutate({ clientId: "phone-of-ada", seq: 1 });
    expect(refused).toMatchObject({ success: false, error: { code: "RECEIPT_IDENTITY_MISMATCH", details: { clientId: "phone-of-ada", seq: 1 } } });
    expect(JSON.stringify(refused)).not.toMatch(/"value"/);
    const overHttp = await post(server.url, "/api/mutation", { path: "counters:bump", args: { name: "shared" }, clientId: "phone-of-ada", seq: 1 }, await tokenFor("eve"));
    expect(overHttp).toMatchObject({ status: 400, body: { error: { code: "RECEIPT_IDENTITY_MISMATCH" } } });
    // Anonymous callers are another identity too.
    expect(await post(server.url, "/api/mutation", { path: "counters:bump", args: { name: "shared" }, clientId: "phone-of-ada", seq: 1 })).toMatchObject({
      status: 400,
      body: { error: { code: "RECEIPT_IDENTITY_MISMATCH" } },
    });
    // A Connect (anonymous until SetAuth) holding Ada's seq is not told it is known.
    const snoop = await session(server.url, null, { clientId: "phone-of-ada", held: [1] });
    expect(snoop.ack).toMatchObject({ known: [], results: [] });
    expect(await counter(server.url)).toBe(1);

    // Ada's own re-send, on a new connection, is answered from her receipt.
    const again = await session(server.url, "ada", { clientId: "phone-of-ada", held: [1] });
    expect(await again.mutate({ clientId: "phone-of-ada", seq: 1 })).toMatchObject({ success: true, value: 1, replayed: true });
    // Eve's own clientId works as ever.
    expect(await eve.mutate({ clientId: "phone-of-eve", seq: 1 })).toMatchObject({ success: true, value: 2 });
    expect(await counter(server.url)).toBe(2);
  });
});

describe("ackedThrough and the client floor", () => {
  it("refuses a re-send of an acknowledged seq instead of applying it again", async () => {
    const server = await node();
    const client = await session(server.url, null);
    for (const seq of [1, 2, 3]) expect(await client.mutate({ clientId: "laptop", seq }, "floor")).toMatchObject({ success: true, value: seq });
    // The client has the results of 1..3: the receipts may go, and those seqs never run again.
    expect(await client.mutate({ clientId: "laptop", seq: 4, ackedThrough: 3 }, "floor")).toMatchObject({ success: true, value: 4 });
    for (const seq of [1, 3]) {
      expect(await client.mutate({ clientId: "laptop", seq }, "floor")).toMatchObject({
        success: false,
        error: { code: "MUTATION_SEQ_BELOW_FLOOR", details: { clientId: "laptop", seq, floorSeq: 4 } },
      });
    }
    // Over HTTP too; the seq at the floor is still answered from its receipt.
    expect(await post(server.url, "/api/mutation", { path: "counters:bump", args: { name: "floor" }, clientId: "laptop", seq: 2 })).toMatchObject({
      status: 400,
      body: { error: { code: "MUTATION_SEQ_BELOW_FLOOR" } },
    });
    expect(await client.mutate({ clientId: "laptop", seq: 4 }, "floor")).toMatchObject({ success: true, value: 4, replayed: true });
    expect(await counter(server.url, "floor")).toBe(4);
    // Another identity's floor is its own: Ada's clientId "laptop" starts from nothing.
    const ada = await session(server.url, "ada");
    expect(await ada.mutate({ clientId: "laptop", seq: 5 }, "floor")).toMatchObject({ success: true, value: 5 });
  });

  it("refuses an ackedThrough that is not below the mutation's own seq, running nothing", async () => {
    const server = await node();
    const client = await session(server.url, null);
    expect(await client.mutate({ clientId: "tablet", seq: 2, ackedThrough: 2 }, "bad")).toMatchObject({ success: false, error: { code: "INVALID_ARGUMENT" } });
    expect(await post(server.url, "/api/mutation", { path: "counters:bump", args: { name: "bad" }, ackedThrough: 1 })).toMatchObject({
      status: 400,
      body: { error: { code: "INVALID_ARGUMENT" } },
    });
    expect(await counter(server.url, "bad")).toBe(0);
  });
});
