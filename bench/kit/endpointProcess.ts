/**
 * Child-process entry: runs the S3 test endpoint in its own process, so that serving
 * requests (HTTP parsing, SigV4, checksums, injected sleeps) does not compete with the
 * benchmarked engine's event loop. Prints one `ready` line with its URL and credentials,
 * then answers the commands of endpointProtocol.ts read from stdin, one reply line each.
 * Exits when told to close or when stdin ends (the benchmark went away).
 *
 *   node --import tsx bench/kit/endpointProcess.ts
 */
import { createInterface } from "node:readline";
import { startS3Endpoint, type S3Endpoint } from "../../test/support/s3-endpoint/index.js";
import type { EndpointCommand, EndpointReady, EndpointReply } from "./endpointProtocol.js";

const endpoint = await startS3Endpoint({ mode: "aws", seed: 1 });
const ready: EndpointReady = {
  type: "ready",
  url: endpoint.url,
  region: endpoint.region,
  bucket: endpoint.bucket,
  credentials: endpoint.credentials,
};
process.stdout.write(`${JSON.stringify(ready)}\n`);

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  let command: EndpointCommand;
  try {
    command = JSON.parse(line) as EndpointCommand;
  } catch {
    reply({ ok: false, error: `not a JSON command: ${line.slice(0, 200)}` });
    continue;
  }
  if (command.command === "close") break;
  reply(run(endpoint, command));
}
await endpoint.close();
reply({ ok: true });

function run(target: S3Endpoint, command: Exclude<EndpointCommand, { command: "close" }>): EndpointReply {
  try {
    switch (command.command) {
      case "latency":
        target.faults.set(command.rules);
        return { ok: true };
      case "no-latency":
        target.faults.clear();
        return { ok: true };
      case "reset-counters":
        target.resetCounters();
        return { ok: true };
      case "counters":
        return { ok: true, counters: target.counters() };
      default:
        return { ok: false, error: `unknown command ${JSON.stringify((command as { command?: unknown }).command)}` };
    }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

function reply(answer: EndpointReply): void {
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
