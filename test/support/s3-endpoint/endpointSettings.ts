import { invalidArgument } from "../../../src/base/errors.js";
import { isValidBucketName } from "./buckets.js";
import { isS3EndpointMode, type S3EndpointMode } from "./operations.js";

/** The endpoint's options, their defaults, and their validation (bad options throw INVALID_ARGUMENT). */

export interface S3EndpointCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface S3EndpointOptions {
  /** Accepted credentials; default [{ accessKeyId: "cairn-test", secretAccessKey: "cairn-test-secret" }]. */
  readonly credentials?: readonly S3EndpointCredentials[];
  /** Region requests must be signed for; default "us-east-1". */
  readonly region?: string;
  /** Default "aws". */
  readonly mode?: S3EndpointMode;
  /** Created at start; default ["cairn-test"]. */
  readonly buckets?: readonly string[];
  /** Seeds the fault-injection randomness; default 1. */
  readonly seed?: number;
}

export const DEFAULT_CREDENTIALS: S3EndpointCredentials = {
  accessKeyId: "cairn-test",
  secretAccessKey: "cairn-test-secret",
};
export const DEFAULT_REGION = "us-east-1";
export const DEFAULT_BUCKET = "cairn-test";
/** Any fixed value would do: a fixed default makes runs without an explicit seed replay too. */
export const DEFAULT_FAULT_SEED = 1;

export interface Settings {
  readonly credentials: readonly S3EndpointCredentials[];
  readonly region: string;
  readonly mode: S3EndpointMode;
  readonly buckets: readonly string[];
  readonly seed: number;
}

export function validatedSettings(options: S3EndpointOptions): Settings {
  const credentials = options.credentials ?? [DEFAULT_CREDENTIALS];
  if (!Array.isArray(credentials) || credentials.length === 0) {
    throw invalidArgument("credentials must be a non-empty array");
  }
  for (const entry of credentials) {
    if (typeof entry?.accessKeyId !== "string" || entry.accessKeyId === "" || entry.accessKeyId.includes("/")) {
      throw invalidArgument("every accessKeyId must be a non-empty string without '/'");
    }
    if (typeof entry.secretAccessKey !== "string" || entry.secretAccessKey === "") {
      throw invalidArgument("every secretAccessKey must be a non-empty string");
    }
  }
  const region = options.region ?? DEFAULT_REGION;
  if (typeof region !== "string" || !/^[a-z0-9-]+$/.test(region)) {
    throw invalidArgument(`invalid region ${JSON.stringify(region)}`);
  }
  const mode = options.mode ?? "aws";
  if (!isS3EndpointMode(mode)) throw invalidArgument(`unknown S3 endpoint mode ${JSON.stringify(mode)}`);
  const buckets = options.buckets ?? [DEFAULT_BUCKET];
  if (!Array.isArray(buckets) || buckets.length === 0 || !buckets.every(isValidBucketName)) {
    throw invalidArgument("buckets must be a non-empty array of valid bucket names", { buckets });
  }
  const seed = options.seed ?? DEFAULT_FAULT_SEED;
  if (!Number.isSafeInteger(seed)) throw invalidArgument("seed must be an integer", { seed });
  return { credentials: [...credentials], region, mode, buckets: [...buckets], seed };
}
