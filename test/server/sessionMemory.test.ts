/**
 * Scenario: a node in a child process (heap read after a full collection) serves one
 * hostile session that subscribes to 1,000 queries with 15 KB of arguments each, while
 * commits re-run what it holds; then it piles up thousands more past the session's
 * limits (which ends it, SESSION_LIMIT_EXCEEDED). The server's heap grows by less than HOSTILE_GROWTH_BYTES_MAX
 * (before the bounds it kept every refused query's arguments and copied every query's
 * arguments into each shared-run key: hundreds of MB), another session's live query
 * keeps updating, and the process stays up.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ProbedServer } from "./ProbedServer.js";
import { SocketClient } from "./serverHarness.js";

/** The stated bound: a session holds at most 1 MiB of query arguments, and its queues drain once answered (measured: ~2 MiB). */
const HOSTILE_GROWTH_BYTES_MAX = 16 * 1024 * 1024;
const ARGS_CHARS = 15_000;

const servers: ProbedServer[] = [];
const clients: SocketClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const server of servers.splice(0)) await server.stop();
});

async function open(url: string, sessionId: string): Promise<SocketClient> {
  const client = await SocketClient.open(url);
  clients.push(client);
  client.write({ type: "Connect", sessionId });
  await client.next((m) => m.type === "ConnectAck");
  return client;
}

describe("a hostile session", () => {
  it("cannot grow the server's heap past the stated bound", async () => {
    const probed = await ProbedServer.start();
    servers.push(probed);
    const observer = await open(probed.url, "observer");
    observer.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "notes:list", args: { channel: "observed" } }], remove: [] });
    await observer.next((m) => m.type === "Transition");
    const baseline = await probed.heapUsed();

    const hostile = await open(probed.url, "hostile");
    let version = 0;
    let queryId = 0;
    const padding = "x".repeat(ARGS_CHARS);
    const addThousand = async () => {
      const add = Array.from({ length: 1_000 }, () => ({ queryId: ++queryId, path: "notes:list", args: { channel: `${padding}${queryId}` } }));
      hostile.write({ type: "ModifyQuerySet", baseVersion: version, newVersion: version + 1, add, remove: [] });
      const answered = ++version;
      await Promise.race([hostile.next((m) => m.type === "Transition" && m.endVersion.querySet === answered), hostile.whenClosed()]);
    };
    const commitAndObserve = async (round: number) => {
      // Commits re-run what the session holds at new timestamps (new shared-run entries).
      for (let commit = 1; commit <= 5; commit++) {
        const requestId = round * 100 + commit;
        observer.write({ type: "Mutation", requestId, path: "notes:add", args: { channel: `${padding}${commit}`, body: "x" } });
        await observer.next((m) => m.type === "MutationResponse" && m.requestId === requestId);
      }
      observer.write({ type: "Mutation", requestId: round * 100 + 99, path: "notes:add", args: { channel: "observed", body: `seen ${round}` } });
      const update = await observer.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && mod.queryId === 1));
      expect(update).toMatchObject({ modifications: [{ type: "QueryUpdated", value: expect.arrayContaining([`seen ${round}`]) }] });
    };
    const expectBounded = async (when: string) => {
      const growth = (await probed.heapUsed()) - baseline;
      expect(probed.alive, probed.log).toBe(true);
      expect(growth, `${when}: heap grew by ${(growth / 1024 / 1024).toFixed(1)} MiB`).toBeLessThan(HOSTILE_GROWTH_BYTES_MAX);
    };

    // 1,000 queries with 15 MB of arguments in all (most refused past the arguments' limit): the session stays open.
    await addThousand();
    await commitAndObserve(1);
    expect(hostile.closed).toBeNull();
    await expectBounded("with the hostile session open");

    // Piling up more refused queries without removing any ends the session.
    await addThousand();
    await addThousand();
    await commitAndObserve(2);
    expect(hostile.closed).toMatchObject({ code: 4400 });
    await expectBounded("after the pile-up");
  });
});
