import { CairnError, errorKindOf, hasErrorCode, isCasConflict, randomHex, systemRandom, type Random } from "../base/index.js";
import type { ObjectStore } from "./ObjectStore.js";

/**
 * Refuses a store that does not honour conditional writes, before Cairn trusts it with a
 * log. Every fence, lease and commit point depends on them; a store that silently
 * ignores If-None-Match or If-Match (old MinIO created keys on If-Match) would let two
 * writers both "win".
 *
 * The probe works under a fresh key `_probe/<random hex>` and removes what it wrote
 * whatever happens. A step that behaves wrongly fails with STORE_NO_CONDITIONAL_WRITES
 * naming that step; an unavailable or forbidden store fails with its own error.
 *
 * Its "casPut with the right etag" step is also where an S3 store whose If-Match etag
 * form is not pinned learns it (quoted for AWS, R2 and MinIO; bare for Ceph radosgw 16):
 * the report and the refusal say which form the store honoured or was sent.
 */

/** What the probe found out beyond "conditional writes work". */
export interface ConditionalWritesReport {
  /** The If-Match etag form the store honours, for stores that tell (S3). */
  readonly ifMatchEtagForm?: string;
}

export const PROBE_PREFIX = "_probe/";
const PROBE_ID_BYTES = 8;

export async function assertConditionalWrites(
  store: ObjectStore,
  options: { random?: Random } = {},
): Promise<ConditionalWritesReport> {
  const random = options.random ?? systemRandom;
  const probeKey = `${PROBE_PREFIX}${randomHex(random, PROBE_ID_BYTES)}`;
  const missingKey = `${probeKey}-missing`;
  const body = (label: string) => new TextEncoder().encode(`cairn conditional-write probe: ${label} ${randomHex(random, 8)}`);
  let failure: unknown;
  try {
    const created = await step(store, "create a new key", () => store.create(probeKey, body("first")));
    await expectConflict(store, "create an existing key", () => store.create(probeKey, body("second")));
    const wrongEtag = randomHex(random, 16);
    await expectConflict(store, "casPut with a wrong etag", () => store.casPut(probeKey, body("third"), wrongEtag));
    const replaced = await step(store, "casPut with the right etag", () =>
      store.casPut(probeKey, body("fourth"), created.etag),
    );
    const ifMatchEtagForm = etagFormOf(store);
    await expectConflict(store, "casPut on a missing key", () => store.casPut(missingKey, body("fifth"), replaced.etag));
    if ((await store.get(missingKey)) !== null) {
      throw refused(store, "casPut on a missing key", "the store created the key (If-Match ignored on missing keys)");
    }
    return ifMatchEtagForm === undefined ? {} : { ifMatchEtagForm };
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    await removeProbeKeys(store, [probeKey, missingKey], failure === undefined);
  }
}

/** Runs a step that must succeed. */
async function step<T>(store: ObjectStore, name: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw asProbeFailure(store, name, error, "it failed");
  }
}

/** Runs a step that must fail with CAS_CONFLICT. */
async function expectConflict(store: ObjectStore, name: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (isCasConflict(error)) return;
    throw asProbeFailure(store, name, error, "it did not answer with a conflict");
  }
  throw refused(store, name, "it succeeded where it had to conflict (the condition was ignored)");
}

/**
 * An unavailable store, wrong credentials or a missing bucket say nothing about
 * conditional writes: those errors pass through as they are.
 */
function asProbeFailure(store: ObjectStore, name: string, error: unknown, what: string): unknown {
  const passThrough =
    errorKindOf(error) === "Unavailable" ||
    hasErrorCode(error, "STORE_ACCESS_DENIED") ||
    hasErrorCode(error, "STORE_BUCKET_MISSING");
  if (passThrough) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return refused(store, name, `${what}: ${reason}`, error);
}

function refused(store: ObjectStore, stepName: string, reason: string, cause?: unknown): CairnError {
  const form = etagFormOf(store);
  const formNote =
    form === undefined ? "" : ` (If-Match etag form: ${form === "unknown" ? "unknown, neither quoted nor bare accepted yet" : form})`;
  return new CairnError(
    "STORE_NO_CONDITIONAL_WRITES",
    `${store.description} does not support conditional writes as Cairn needs them — step "${stepName}": ${reason}${formNote}. ` +
      "Use AWS S3, Cloudflare R2, MinIO RELEASE.2025-09-07T16-13-09Z or later, or Ceph radosgw 16.2 or later.",
    {
      ...(cause === undefined ? {} : { cause }),
      details: { step: stepName, ...(form === undefined ? {} : { ifMatchEtagForm: form }) },
    },
  );
}

/**
 * The If-Match etag form of a store that has one (S3ObjectStore's `ifMatchEtagForm`),
 * read structurally so that the probe keeps depending on ObjectStore alone.
 */
function etagFormOf(store: ObjectStore): string | undefined {
  const form = (store as { readonly ifMatchEtagForm?: unknown }).ifMatchEtagForm;
  return typeof form === "string" ? form : undefined;
}

/** Best effort when the probe already failed (its error matters more); strict otherwise. */
async function removeProbeKeys(store: ObjectStore, keys: string[], strict: boolean): Promise<void> {
  try {
    await store.deleteMany(keys);
  } catch (error) {
    if (strict) throw error;
  }
}
