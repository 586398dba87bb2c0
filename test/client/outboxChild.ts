/**
 * A client process for test/client/outbox.test.ts, killed by the test mid-flight: it
 * opens a client of argv[2] over the file outbox argv[3], says `connected` once
 * connected, and on each line `bump <name> <count>` from stdin makes that many
 * `counters:bump` mutations without waiting for them, saying `saved` once the outbox
 * holds them all. It never exits by itself.
 */
import { createInterface } from "node:readline";
import { functionReference } from "../../src/client/api.js";
import { createNodeClient, fileOutbox } from "../../src/client/node.js";

const bump = functionReference<"mutation", { name: string }, number>("counters:bump");
const [url, path] = process.argv.slice(2) as [string, string];
const client = createNodeClient(url, { outbox: fileOutbox(path), reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 100, onError: (error) => console.error(String(error)) });
client.onConnectionChange((state) => {
  if (state.state === "connected") console.log("connected");
});
client.onPendingMutationsChange((pending) => {
  if (pending.length > 0 && pending.every((mutation) => mutation.state !== "saving")) console.log("saved");
});
for await (const line of createInterface({ input: process.stdin })) {
  const [command, name, count] = line.split(" ");
  if (command === "bump") for (let made = 0; made < Number(count); made++) client.mutation(bump, { name: name! }).catch(() => undefined);
}
