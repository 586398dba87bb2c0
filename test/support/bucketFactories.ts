import { assertConditionalWrites } from "../../src/objectstore/assertConditionalWrites.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { openObjectStore } from "../../src/objectstore/openObjectStore.js";
import { S3ObjectStore } from "../../src/objectstore/S3ObjectStore.js";
import { ensureBucket, newTestPrefix, realS3, removePrefix, storeUrlFor, type RealS3 } from "./realS3.js";
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

/**
 * The real store of CAIRN_TEST_S3_URL (test/support/realS3.ts): a fresh prefix per test,
 * opened by URL and probed as `cairn serve` does (which also teaches the adapter the
 * store's If-Match etag form), and everything under it removed afterwards with the minio
 * client.
 */
export function realS3Bucket(s3: RealS3): BucketFactory {
  return {
    name: "the real store of CAIRN_TEST_S3_URL",
    open: async () => {
      await ensureBucket(s3);
      const prefix = newTestPrefix("shard");
      const store = await openObjectStore(storeUrlFor(s3, prefix));
      await assertConditionalWrites(store);
      return {
        store,
        close: async () => {
          await store.close();
          await removePrefix(s3, prefix);
        },
      };
    },
  };
}

const configuredRealS3 = realS3();

/** Memory and the S3 test endpoint always; the real store too when CAIRN_TEST_S3_URL is set. */
export const BUCKET_FACTORIES: readonly BucketFactory[] = [
  memoryBucket,
  s3EndpointBucket,
  ...(configuredRealS3 === undefined ? [] : [realS3Bucket(configuredRealS3)]),
];
