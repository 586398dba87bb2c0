/**
 * Child of diffMemory.test.ts (run with --expose-gc): a node with one diff subscriber to
 * a 500-row range, then 1,250 single-row inserts into it; prints the heap after a full GC
 * at 250 and at 1,250 inserts as a JSON line.
 */
import { App } from "../../src/functions/App.js";
import * as diffApp from "../functions/diffApp.js";
import { SocketClient, startTestNode } from "./serverHarness.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const started = await startTestNode({ app: App.fromModule(diffApp, "diff app") });
const node = started.node;
const post = async (args: unknown) => {
  const response = await fetch(`${node.url}api/mutation`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ path: "items:insert", args }) });
  if (response.status !== 200) throw new Error(`insert failed: ${response.status}`);
};
await post({ items: Array.from({ length: 500 }, (_, rank) => ({ group: "g0", rank, label: "x".repeat(100) })) });
const socket = await SocketClient.open(node.url);
socket.write({ type: "Connect", sessionId: "memory", diffs: true });
await socket.next((message) => message.type === "ConnectAck");
socket.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "items:ofGroup", args: { group: "g0", order: "desc", n: 500 } }], remove: [] });
await socket.next((message) => message.type === "Transition");
const heapMiB = () => {
  gc();
  gc();
  // The test client keeps the frames it received: they are not the node's.
  socket.frames.length = 0;
  (socket as unknown as { unseen: unknown[] }).unseen.length = 0;
  gc();
  return process.memoryUsage().heapUsed / 1048576;
};
let inserted = 0;
const insertUntil = async (count: number) => {
  for (; inserted < count; inserted++) await post({ items: [{ group: "g0", rank: 1000 + inserted, label: "y".repeat(100) }] });
  // The last diffs reach the session before the heap is read.
  await new Promise((resolve) => setTimeout(resolve, 300));
};
await insertUntil(250);
const early = heapMiB();
await insertUntil(1250);
const late = heapMiB();
console.log(JSON.stringify({ early, late, diffs: node.handler.stats().queryDiffs }));
socket.close();
await started.close();
process.exit(0);
