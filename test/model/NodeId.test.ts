/**
 * Scenario: one node-id pattern holds at every boundary that takes a node id. The same
 * table of bad ids (empty, too long, a space, a colon, a slash, a newline, non-ASCII) is
 * refused by the `--node-id` flag of `cairn serve` (a real child process, exit 1), the
 * node-id file in the local directory, the internal peer endpoint of a real node (400),
 * the shard engine's options, the node registry and consumer watermarks; good ids pass.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { ConsumerWatermarks } from "../../src/gc/ConsumerWatermarks.js";
import { isNodeId } from "../../src/model/NodeId.js";
import { MemoryObjectStore } from "../../src/objectstore/index.js";
import { NodeRegistry } from "../../src/fleet/NodeRegistry.js";
import { localNodeId } from "../../src/server/localNodeId.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { codeOf } from "../support/errorCode.js";
import { runCairn } from "../support/runCairn.js";
import { startTestNode } from "../server/serverHarness.js";

const BAD_IDS = ["", "x".repeat(129), "has space", "writer:1", "a/b", "a\nb", "nœud"];
const GOOD_IDS = ["a", "node-1f2e", "r1.x_y-z", "x".repeat(128)];

describe("node ids", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-node-ids-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("the pattern refuses the bad ids and takes the good ones", () => {
    expect(BAD_IDS.filter(isNodeId)).toEqual([]);
    expect(GOOD_IDS.filter(isNodeId)).toEqual(GOOD_IDS);
    expect(isNodeId(7)).toBe(false);
  });

  it("cairn serve refuses a bad --node-id before it touches the bucket", async () => {
    // Two of the table (each run is a child process): the colon the engine once took, and one too long.
    const runs = await Promise.all(
      ["writer:1", "x".repeat(129)].map((id, index) =>
        runCairn(["serve", "--port", "0", "--store", join(root, `cli-bucket-${index}`), "--local", join(root, `cli-local-${index}`), "--node-id", id]),
      ),
    );
    for (const run of runs) {
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/--node-id must be 1–128 letters, digits, '\.', '_' or '-'/);
    }
  });

  it("the node-id file, the engine's options, the registry and watermarks refuse each bad id", async () => {
    const store = new MemoryObjectStore();
    const random = new SeededRandom(23);
    for (const [index, id] of BAD_IDS.entries()) {
      const local = join(root, `file-${index}`);
      mkdirSync(local, { recursive: true });
      writeFileSync(join(local, "node-id"), `${id}\n`);
      // The file is trimmed: an id of blanks or one cut by a newline is still refused.
      expect(codeOf(() => localNodeId(local, random)), JSON.stringify(id)).toBe("INVALID_ARGUMENT");
      expect(codeOf(() => new NodeRegistry(store, "d".repeat(32), id, random)), JSON.stringify(id)).toBe("INVALID_ARGUMENT");
      await expect(new ConsumerWatermarks(store, 0, random).publish(id, 1, 1_000), JSON.stringify(id)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(ShardedStore.open({ store, localDirectory: join(root, `engine-${index}`), nodeId: id, numShards: 1, random }), JSON.stringify(id)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
    }
    for (const id of GOOD_IDS) {
      const local = join(root, `file-${id.length}-${id.slice(0, 8)}`);
      mkdirSync(local, { recursive: true });
      writeFileSync(join(local, "node-id"), `${id}\n`);
      expect(localNodeId(local, random)).toBe(id);
      expect(new NodeRegistry(store, "d".repeat(32), id, random).nodeId).toBe(id);
    }
  });

  it("the internal peer endpoint answers 400 to each bad id and 200 to a good one", async () => {
    const server = await startTestNode({ adminKey: "admin-secret" });
    try {
      const announce = (nodeId: string) =>
        fetch(new URL("/api/internal/peer", server.node.url), {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Admin admin-secret" },
          body: JSON.stringify({ nodeId, url: "http://127.0.0.1:9/" }),
        });
      for (const id of BAD_IDS) {
        const response = await announce(id);
        expect(response.status, JSON.stringify(id)).toBe(400);
        expect(await response.json()).toMatchObject({ error: { code: "PROTOCOL_INVALID" } });
      }
      for (const id of GOOD_IDS) expect((await announce(id)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
