/**
 * A client process for test/client/outboxAuth.test.ts, killed by the test mid-flight: it
 * opens a client of argv[2] over the file outbox argv[3] and says `connected` once
 * connected. From stdin: `auth <token>` sets the token (`auth anonymous` signs out) and
 * says `auth-set`, then `auth <subject>` once the server accepted it; `append <name>
 * <line>` makes a `log:append` mutation without waiting for it, saying `saved <n>` once
 * the outbox holds all n mutations pending. It never exits by itself.
 */
import { createInterface } from "node:readline";
import { functionReference } from "../../src/client/api.js";
import { createNodeClient, fileOutbox } from "../../src/client/node.js";

const append = functionReference<"mutation", { name: string; line: string }, null>("log:append");
const [url, path] = process.argv.slice(2) as [string, string];
const client = createNodeClient(url, { outbox: fileOutbox(path), reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 100, onError: (error) => console.error(String(error)) });
client.onConnectionChange((state) => {
  if (state.state === "connected") console.log("connected");
});
client.onPendingMutationsChange((pending) => {
  if (pending.length > 0 && pending.every((mutation) => mutation.state !== "saving")) console.log(`saved ${pending.length}`);
});
for await (const line of createInterface({ input: process.stdin })) {
  const [command, first, second] = line.split(" ");
  if (command === "auth") {
    client.setAuth(first === "anonymous" ? null : first!).then((subject) => console.log(`auth ${subject}`), (error: unknown) => console.error(String(error)));
    console.log("auth-set");
  }
  if (command === "append") client.mutation(append, { name: first!, line: second! }).catch(() => undefined);
}
