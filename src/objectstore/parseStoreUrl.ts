import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError } from "../base/index.js";

/**
 * Store URLs: the one string that tells Cairn where its bucket is (`--store <url>`).
 * Parsing is pure: it reads no environment, touches no disk and no network.
 */

export const STORE_URL_FORMS = [
  "file:///absolute/path, or a plain path such as ./data (a directory, created if missing)",
  "mem://name (memory of this process; for tests)",
  "s3://bucket[/prefix][?endpoint=http(s)://host[:port]&region=…&forcePathStyle=true|false&checksums=when_supported|when_required]",
] as const;

export const S3_URL_PARAMETERS = ["endpoint", "region", "forcePathStyle", "checksums"] as const;
type S3UrlParameter = (typeof S3_URL_PARAMETERS)[number];

export const S3_CHECKSUM_MODES = ["when_supported", "when_required"] as const;
export type S3ChecksumMode = (typeof S3_CHECKSUM_MODES)[number];

export type StoreLocation =
  | { readonly kind: "fs"; readonly directory: string }
  | { readonly kind: "memory"; readonly name: string | undefined }
  | {
      readonly kind: "s3";
      readonly bucket: string;
      /** "" or ending with "/". */
      readonly prefix: string;
      readonly endpoint: string | undefined;
      readonly region: string | undefined;
      readonly forcePathStyle: boolean | undefined;
      readonly checksums: S3ChecksumMode | undefined;
    };

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
/** S3 bucket naming rules (also R2's and MinIO's): 3–63 of a-z 0-9 . - , alphanumeric ends. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION_NAME = /^[a-z0-9-]+$/;

/** Where `url` points; STORE_URL_INVALID (listing the accepted forms) if Cairn cannot use it. */
export function parseStoreUrl(url: string, workingDirectory = process.cwd()): StoreLocation {
  if (url.trim() === "") throw invalidStoreUrl(url, "the store URL is empty");
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  // A one-letter "scheme" is a Windows drive (C:\data); no scheme at all is a plain path.
  if (scheme === undefined || (scheme.length === 1 && /^[a-zA-Z]:[\\/]/.test(url))) {
    return { kind: "fs", directory: isAbsolute(url) ? url : resolve(workingDirectory, url) };
  }
  const parsed = parseUrl(url);
  switch (scheme) {
    case "file":
      return parseFileUrl(url, parsed);
    case "mem":
      return parseMemoryUrl(url, parsed);
    case "s3":
      return parseS3Url(url, parsed);
    default:
      throw invalidStoreUrl(url, `unknown scheme "${scheme}:"`);
  }
}

function parseFileUrl(url: string, parsed: URL): StoreLocation {
  if (parsed.search !== "" || parsed.hash !== "") throw invalidStoreUrl(url, "a file: URL takes no query or fragment");
  try {
    return { kind: "fs", directory: fileURLToPath(parsed) };
  } catch (error) {
    throw invalidStoreUrl(url, `not a local file URL (${(error as Error).message})`);
  }
}

function parseMemoryUrl(url: string, parsed: URL): StoreLocation {
  if (parsed.search !== "" || parsed.hash !== "" || (parsed.pathname !== "" && parsed.pathname !== "/")) {
    throw invalidStoreUrl(url, "a mem: URL is only mem://name");
  }
  return { kind: "memory", name: parsed.host === "" ? undefined : decodeURIComponent(parsed.host) };
}

function parseS3Url(url: string, parsed: URL): StoreLocation {
  const bucket = parsed.host;
  if (bucket === "") throw invalidStoreUrl(url, "the bucket name is empty");
  if (parsed.port !== "" || parsed.username !== "" || parsed.password !== "") {
    throw invalidStoreUrl(url, "an s3: URL names a bucket, not a host: put the host in endpoint=…");
  }
  if (!BUCKET_NAME.test(bucket)) {
    throw invalidStoreUrl(url, `"${bucket}" is not a valid bucket name (3–63 characters of a-z, 0-9, "." and "-")`);
  }
  if (parsed.hash !== "") throw invalidStoreUrl(url, "an s3: URL takes no fragment");
  const parameters = s3Parameters(url, parsed.searchParams);
  return {
    kind: "s3",
    bucket,
    prefix: normalizePrefix(url, parsed.pathname),
    endpoint: parameters.endpoint === undefined ? undefined : parseEndpoint(url, parameters.endpoint),
    region: parameters.region === undefined ? undefined : parseRegion(url, parameters.region),
    forcePathStyle: parameters.forcePathStyle === undefined ? undefined : parseBoolean(url, parameters.forcePathStyle),
    checksums: parameters.checksums === undefined ? undefined : parseChecksums(url, parameters.checksums),
  };
}

function s3Parameters(url: string, search: URLSearchParams): Partial<Record<S3UrlParameter, string>> {
  const parameters: Partial<Record<S3UrlParameter, string>> = {};
  for (const [name, value] of search) {
    if (!(S3_URL_PARAMETERS as readonly string[]).includes(name)) {
      throw invalidStoreUrl(url, `unknown parameter "${name}" (known: ${S3_URL_PARAMETERS.join(", ")})`);
    }
    if (parameters[name as S3UrlParameter] !== undefined) throw invalidStoreUrl(url, `parameter "${name}" given twice`);
    parameters[name as S3UrlParameter] = value;
  }
  return parameters;
}

/** The URL path without its leading "/", percent-decoded, ending with "/" unless empty. */
function normalizePrefix(url: string, pathname: string): string {
  let prefix: string;
  try {
    prefix = decodeURIComponent(pathname.replace(/^\//, ""));
  } catch {
    throw invalidStoreUrl(url, "the prefix has a malformed %-escape");
  }
  return prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`;
}

function parseEndpoint(url: string, endpoint: string): string {
  const parsed = URL.canParse(endpoint) ? new URL(endpoint) : undefined;
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw invalidStoreUrl(url, `endpoint "${endpoint}" is not an http:// or https:// URL`);
  }
  if (parsed.search !== "" || parsed.hash !== "") throw invalidStoreUrl(url, "the endpoint takes no query or fragment");
  return endpoint;
}

function parseRegion(url: string, region: string): string {
  if (!REGION_NAME.test(region)) throw invalidStoreUrl(url, `region "${region}" is not a region name (e.g. us-east-1, auto)`);
  return region;
}

function parseBoolean(url: string, value: string): boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  throw invalidStoreUrl(url, `forcePathStyle must be true or false, not "${value}"`);
}

function parseChecksums(url: string, value: string): S3ChecksumMode {
  const mode = S3_CHECKSUM_MODES.find((candidate) => candidate === value.toLowerCase());
  if (mode === undefined) throw invalidStoreUrl(url, `checksums must be ${S3_CHECKSUM_MODES.join(" or ")}, not "${value}"`);
  return mode;
}

function parseUrl(url: string): URL {
  if (!URL.canParse(url)) throw invalidStoreUrl(url, "it is not a well-formed URL");
  return new URL(url);
}

export function invalidStoreUrl(url: string, reason: string): CairnError {
  const forms = STORE_URL_FORMS.map((form) => `  ${form}`).join("\n");
  return new CairnError("STORE_URL_INVALID", `cannot use store "${url}": ${reason}. Accepted forms:\n${forms}`, {
    details: { url, reason },
  });
}

/**
 * The URL of the store under `prefix` ("g2/", ending with "/") of the store `url` names,
 * with a plain path made absolute: what another process can open to reach the same keys
 * (a branch's parent link). A mem: store is reachable only from its own process, as a whole.
 */
export function storeUrlWithin(url: string, prefix: string, workingDirectory = process.cwd()): string {
  if (prefix !== "" && !prefix.endsWith("/")) throw new CairnError("INVALID_ARGUMENT", `a store prefix must end with "/", not ${JSON.stringify(prefix)}`);
  const location = parseStoreUrl(url, workingDirectory);
  switch (location.kind) {
    case "fs":
      return prefix === "" ? location.directory : resolve(location.directory, prefix);
    case "memory":
      // One process's named store has no sub-stores by URL; as a whole it is reachable within the process (tests).
      if (prefix === "") return url;
      throw invalidStoreUrl(url, `a mem: store has no URL for its keys under ${prefix}`);
    case "s3": {
      const parsed = new URL(url);
      parsed.pathname = `/${location.prefix}${prefix}`.replace(/^\/+/, "/");
      return parsed.toString();
    }
  }
}
