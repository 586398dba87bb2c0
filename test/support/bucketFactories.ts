import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import type { BucketFactory } from "./shardHarness.js";
import { startS3Endpoint } from "./s3-endpoint/index.js";

/** A fresh in-memory bucket. */
export const memoryBucket: BucketFactory = {
  name: "memory",
  open: async () => {
    const store = new MemoryObjectStore();
    return { store, close: () => store.close() };
  },
};

/** A fresh S3 test endpoint on a loopback port, reached through the real AWS SDK. */
export const s3EndpointBucket: BucketFactory = {
  name: "the S3 test endpoint",
  open: async () => {
    const endpoint = await startS3Endpoint();
    const store = new S3ObjectStore({
      bucket: endpoint.bucket,
      prefix: "deployment/",
      region: endpoint.region,
      endpoint: endpoint.url,
      forcePathStyle: true,
      credentials: endpoint.credentials,
    });
    return {
      store,
      close: async () => {
        await store.close();
        await endpoint.close();
      },
    };
  },
};

export const BUCKET_FACTORIES: readonly BucketFactory[] = [memoryBucket, s3EndpointBucket];
