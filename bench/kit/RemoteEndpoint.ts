import { CairnError } from "../../src/base/errors.js";
import { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import type { EndpointCommand, EndpointCounters, EndpointReady, EndpointReply } from "./endpointProtocol.js";
import type { BenchLatencyModel } from "./latencyModels.js";
import { TsxChild } from "./TsxChild.js";

/** Where the endpoint listens, and the credentials it takes: all a client (or a `cairn` child) needs. */
export interface EndpointAddress {
  readonly url: string;
  readonly region: string;
  readonly bucket: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/**
 * The S3 test endpoint running in a child process (endpointProcess.ts), driven over its
 * stdin/stdout (endpointProtocol.ts): the latency model on or off, counters reset and
 * read. Commands run one at a time in the order issued.
 */
export class RemoteEndpoint {
  private pending: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly child: TsxChild,
    readonly address: EndpointAddress,
    /** What latencyOn() injects. */
    readonly latencyModel: BenchLatencyModel,
  ) {}

  static async start(latencyModel: BenchLatencyModel): Promise<RemoteEndpoint> {
    const child = TsxChild.start("S3 test endpoint", ["bench/kit/endpointProcess.ts"], { stdout: "messages" });
    try {
      const ready = (await child.nextMessage()) as EndpointReady;
      if (ready.type !== "ready") throw new CairnError("INTERNAL", "the endpoint child did not announce itself first");
      const { url, region, bucket, credentials } = ready;
      return new RemoteEndpoint(child, { url, region, bucket, credentials }, latencyModel);
    } catch (error) {
      await child.kill();
      throw error;
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** A store over the endpoint's bucket under `prefix` (each benchmark phase its own). */
  store(prefix: string): S3ObjectStore {
    return storeAt(this.address, prefix);
  }

  async latencyOn(): Promise<void> {
    await this.command({ command: "latency", rules: this.latencyModel.rules });
  }

  /** Injects `rules` instead of the model's (e.g. a fixed latency). */
  async latencyRules(rules: BenchLatencyModel["rules"]): Promise<void> {
    await this.command({ command: "latency", rules });
  }

  async latencyOff(): Promise<void> {
    await this.command({ command: "no-latency" });
  }

  async resetCounters(): Promise<void> {
    await this.command({ command: "reset-counters" });
  }

  async counters(): Promise<EndpointCounters> {
    const reply = await this.command({ command: "counters" });
    if (reply.counters === undefined) throw new CairnError("INTERNAL", "the endpoint child sent no counters");
    return reply.counters;
  }

  async close(): Promise<void> {
    try {
      await this.command({ command: "close" });
      await this.child.finished();
    } finally {
      await this.child.kill();
    }
  }

  private command(command: EndpointCommand): Promise<Extract<EndpointReply, { ok: true }>> {
    const next = this.pending.then(async () => {
      this.child.send(command);
      const reply = (await this.child.nextMessage()) as EndpointReply;
      if (!reply.ok) throw new CairnError("INTERNAL", `the endpoint child refused ${command.command}: ${reply.error}`);
      return reply;
    });
    this.pending = next.catch(() => undefined);
    return next;
  }
}

export function storeAt(address: EndpointAddress, prefix: string): S3ObjectStore {
  return new S3ObjectStore({
    bucket: address.bucket,
    prefix,
    region: address.region,
    endpoint: address.url,
    forcePathStyle: true,
    credentials: address.credentials,
  });
}

/** The `s3://` store URL of `prefix` in the endpoint's bucket, as `cairn serve --store` takes it. */
export function storeUrlAt(address: EndpointAddress, prefix: string): string {
  return `s3://${address.bucket}/${prefix}?endpoint=${encodeURIComponent(address.url)}&region=${address.region}&forcePathStyle=true`;
}
