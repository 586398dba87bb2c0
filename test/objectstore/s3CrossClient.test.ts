/**
 * Scenario: what Cairn's S3 adapter writes to a real store (CAIRN_TEST_S3_URL), read back
 * by another, independently written client — the `minio` package — so that Cairn's own
 * adapter is never the only client that has talked to the server: the bytes of a create
 * and of a casPut must be there byte for byte under the etag Cairn reported (quotes
 * stripped), a 5 MB body included; and an object the minio client wrote must be readable
 * by Cairn under minio's etag and replaceable by a casPut on it. Skipped without a URL.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { assertConditionalWrites } from "../../src/objectstore/assertConditionalWrites.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import { openObjectStore } from "../../src/objectstore/openObjectStore.js";
import {
  ensureBucket,
  listWithMinio,
  newTestPrefix,
  readWithMinio,
  realS3,
  removePrefix,
  storeUrlFor,
  writeWithMinio,
  type RealS3,
} from "../support/realS3.js";
import { bytes, expectBody, expectConflict } from "./conformance.js";

const LARGE_BODY_BYTES = 5 * 1024 * 1024;
const configured = realS3();

describe.skipIf(configured === undefined)(`Cairn's S3 adapter, read back with the minio client`, () => {
  const s3 = configured as RealS3;
  let prefix: string;
  let store: ObjectStore;

  beforeAll(async () => {
    await ensureBucket(s3);
  });

  const open = async () => {
    prefix = newTestPrefix("cross-client");
    store = await openObjectStore(storeUrlFor(s3, prefix));
    return store;
  };

  afterEach(async () => {
    await store.close();
    expect(await removePrefix(s3, prefix)).toBeGreaterThan(0);
    expect(await listWithMinio(s3, prefix)).toEqual([]);
  });

  it("create and casPut: minio reads Cairn's bytes under the etags Cairn reported", async () => {
    const cairn = await open();
    const created = await cairn.create("doc", bytes("version one"));
    expect(await readWithMinio(s3, `${prefix}doc`)).toEqual({ body: Buffer.from("version one"), etag: created.etag });
    const replaced = await cairn.casPut("doc", bytes("version two"), created.etag);
    expect(replaced.etag).not.toBe(created.etag);
    expect(await readWithMinio(s3, `${prefix}doc`)).toEqual({ body: Buffer.from("version two"), etag: replaced.etag });
    await expectConflict(cairn.casPut("doc", bytes("version three"), created.etag));
    expect((await readWithMinio(s3, `${prefix}doc`)).body).toEqual(Buffer.from("version two"));
  });

  it("a 5 MB body, binary, round-trips byte for byte between the two clients", async () => {
    const cairn = await open();
    const body = new SeededRandom(11).bytes(LARGE_BODY_BYTES);
    const created = await cairn.create("large", body);
    const read = await readWithMinio(s3, `${prefix}large`);
    expect(read.etag).toBe(created.etag);
    expect(read.body.byteLength).toBe(LARGE_BODY_BYTES);
    expect(Buffer.compare(read.body, body)).toBe(0);
    const next = new SeededRandom(12).bytes(LARGE_BODY_BYTES);
    const replaced = await cairn.casPut("large", next, created.etag);
    const reread = await readWithMinio(s3, `${prefix}large`);
    expect(reread.etag).toBe(replaced.etag);
    expect(Buffer.compare(reread.body, next)).toBe(0);
  });

  it("an object minio wrote: Cairn reads it under minio's etag and replaces it by casPut on that etag", async () => {
    const cairn = await open();
    await assertConditionalWrites(cairn);
    const etag = await writeWithMinio(s3, `${prefix}foreign`, Buffer.from("written by minio"));
    expect(expectBody(await cairn.get("foreign"))).toEqual({ body: bytes("written by minio"), etag });
    await expectConflict(cairn.create("foreign", bytes("create over it")));
    const replaced = await cairn.casPut("foreign", bytes("replaced by cairn"), etag);
    expect(await readWithMinio(s3, `${prefix}foreign`)).toEqual({ body: Buffer.from("replaced by cairn"), etag: replaced.etag });
  });
});
