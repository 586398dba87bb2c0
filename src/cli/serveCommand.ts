import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError, systemClock, systemRandom } from "../base/index.js";
import { isNodeId, NODE_ID_FORM } from "../model/index.js";
import { loadApp, type App } from "../functions/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { checkHttpActionsPath, HTTP_ACTIONS_PATH_DEFAULT, localNodeId, parseCorsOrigins, StaticFiles, startNodeAcrossReshards, type CorsOrigin, type WebApp } from "../server/index.js";
import { resolveTuning, type ShardEngineTuning } from "../shard/index.js";
import type { TokenVerifier } from "../sync/index.js";
import { lockLocalDirectory } from "./localDirectoryLock.js";
import { nodeLogging, type LogFormat, type NodeLogging } from "./logFormat.js";
import { progressReporter } from "./progressReporter.js";
import { stopSignal } from "./stopSignal.js";
import { tokenVerifierOf, type AuthFlags } from "./tokenVerifierOf.js";

export interface ServeOptions extends AuthFlags {
  readonly store: string;
  readonly local: string;
  readonly shards?: number;
  readonly nodeId?: string;
  /** The app module (schema and functions); default: the demo app in the repository. */
  readonly app?: string;
  /** --static: the web app's build output, served at `/` instead of the status page. */
  readonly static?: string;
  /** --cors-origin (repeatable; each may be a comma list). */
  readonly corsOrigin?: readonly string[];
  /** --http-path: where the app's HTTP actions are served (default /http). */
  readonly httpPath?: string;
  /** --file-max-mib: the largest stored file (default 1 GiB). */
  readonly fileMaxMib?: number;
  readonly port: number;
  readonly host: string;
  readonly replica?: boolean;
  readonly standby?: boolean;
  readonly takeover?: boolean;
  readonly fleet?: boolean;
  readonly beatMs?: number;
  readonly presenceTtlMs?: number;
  readonly advertiseUrl?: string;
  readonly maxClockSkewMs?: number;
  readonly pollIntervalMs?: number;
  /** commander's --no-wake-hints. */
  readonly wakeHints?: boolean;
  readonly engineTuning?: string;
  /** --log-format (default text). */
  readonly logFormat?: LogFormat;
}

/** Where `cairn init` puts a project's app: `cairn serve` in that project serves it without --app. */
export const PROJECT_APP_PATH = "cairn/app.ts";

/** A project's own app (cairn/app.ts here), else the demo. */
function defaultAppPath(): string {
  return existsSync(PROJECT_APP_PATH) ? resolve(PROJECT_APP_PATH) : DEMO_APP_PATH;
}

/** The demo app that ships with Cairn, served when no --app is given outside a project. */
export const DEMO_APP_PATH = fileURLToPath(new URL("../../demo/app.ts", import.meta.url));
/** The demo's browser page, served at `/` with the demo app. */
export const DEMO_WEB_APP: WebApp = {
  htmlPath: fileURLToPath(new URL("../../demo/web/index.html", import.meta.url)),
  entryPath: fileURLToPath(new URL("../../demo/web/main.ts", import.meta.url)),
};

/**
 * Opens the deployment, becomes the writer of every shard (or follows it as a replica or
 * standby), serves the app over HTTP and WebSocket, and runs until SIGINT/SIGTERM; then
 * stops accepting, drains, relinquishes the leases and exits 0.
 */
export async function serveCommand(options: ServeOptions): Promise<void> {
  const logging = nodeLogging(options.logFormat ?? "text", systemClock);
  const say = logging.log;
  const verifier = await tokenVerifierOf(options, say);
  const role = roleOf(options);
  if (options.nodeId !== undefined && !isNodeId(options.nodeId)) {
    throw new CairnError("INVALID_ARGUMENT", `--node-id must be ${NODE_ID_FORM} (it names the node's registry entry and watermarks), not ${JSON.stringify(options.nodeId)}`);
  }
  const engineTuning = parseEngineTuning(options.engineTuning);
  if (options.advertiseUrl !== undefined && !(/^https?:\/\//.test(options.advertiseUrl) && URL.canParse(options.advertiseUrl))) {
    throw new CairnError("INVALID_ARGUMENT", `--advertise-url must be an http(s) URL, not ${JSON.stringify(options.advertiseUrl)}`);
  }
  const adminKey = process.env["CAIRN_ADMIN_KEY"] || null;
  const corsOrigins = parseCorsOrigins(options.corsOrigin ?? []);
  if (options.httpPath !== undefined) checkHttpActionsPath(options.httpPath);
  // Checked here too (the node checks it again): a missing build stops startup before the bucket is touched.
  if (options.static !== undefined) await StaticFiles.open(options.static);
  // The app first: a broken app stops startup before anything touches the bucket.
  const appPath = options.app ?? defaultAppPath();
  const app = await loadApp(appPath);
  say(`app ${app.source}: ${app.paths.length} function(s): ${app.paths.join(", ")}`);
  const localLock = await lockLocalDirectory(options.local);
  try {
    await serveLocked(options, { app, appPath, role, verifier, engineTuning, adminKey, corsOrigins }, logging);
  } finally {
    await localLock.release();
  }
  say("stopped");
}

/** What serveCommand checked and loaded before it took the local directory. */
interface ServeInputs {
  readonly app: App;
  readonly appPath: string;
  readonly role: ServeRole;
  readonly verifier: TokenVerifier | null;
  readonly engineTuning: Partial<ShardEngineTuning> | undefined;
  readonly adminKey: string | null;
  readonly corsOrigins: readonly CorsOrigin[];
}

/** The rest of `serve`, while this process holds the local directory. */
async function serveLocked(options: ServeOptions, { app, appPath, role, verifier, engineTuning, adminKey, corsOrigins }: ServeInputs, logging: NodeLogging): Promise<void> {
  const say = logging.log;
  const store = await openObjectStore(options.store);
  try {
    const probe = await assertConditionalWrites(store);
    const form = probe.ifMatchEtagForm === undefined ? "" : `; If-Match etags sent ${probe.ifMatchEtagForm}`;
    say(`store ${store.description} (conditional writes verified${form})`);
    const nodeId = options.nodeId ?? localNodeId(options.local, systemRandom);
    // Listen before starting: whoever waits for the announcement may signal at once.
    const stopRequested = stopSignal(say);
    // A reshard that retires the layout re-opens the node on the new one (same port and id).
    const node = await startNodeAcrossReshards({
      role,
      ...(options.takeover ? { takeover: true } : {}),
      ...(role === "fleet"
        ? { fleet: { ...(options.beatMs !== undefined ? { beatMs: options.beatMs } : {}), ...(options.presenceTtlMs !== undefined ? { presenceTtlMs: options.presenceTtlMs } : {}) } }
        : {}),
      ...(options.advertiseUrl !== undefined ? { advertiseUrl: withSlash(options.advertiseUrl) } : {}),
      ...(options.maxClockSkewMs !== undefined ? { maxClockSkewMs: options.maxClockSkewMs } : {}),
      ...(options.pollIntervalMs !== undefined ? { tailer: { idlePollMs: options.pollIntervalMs } } : {}),
      wakeHints: options.wakeHints !== false,
      ...(engineTuning !== undefined ? { engineTuning } : {}),
      store,
      localDirectory: options.local,
      app,
      nodeId,
      ...(options.shards !== undefined ? { numShards: options.shards } : {}),
      port: options.port,
      host: options.host,
      adminKey,
      verifier,
      webApp: appPath === DEMO_APP_PATH && options.static === undefined ? DEMO_WEB_APP : null,
      ...(options.static !== undefined ? { staticDir: options.static } : {}),
      corsOrigins,
      ...(options.httpPath !== undefined ? { httpActionsPath: options.httpPath } : {}),
      ...(options.fileMaxMib !== undefined ? { fileBytesMax: options.fileMaxMib * 1024 * 1024 } : {}),
      log: say,
      ...(logging.onFunctionLog !== undefined ? { onFunctionLog: logging.onFunctionLog } : {}),
      echoFunctionConsole: logging.echoFunctionConsole,
      onEngineEvent: progressReporter(say),
    });
    say(`auth: ${verifier === null ? "anonymous only (no --jwt-secret / --jwks / --jwks-url)" : "JWTs verified"}; admin API and dashboard ${adminKey === null ? "disabled (set CAIRN_ADMIN_KEY)" : "enabled"}`);
    const page = options.static !== undefined ? `the app in ${options.static}` : appPath === DEMO_APP_PATH ? "the demo's page" : "a status page";
    const origins = corsOrigins.length === 0 ? "none (same-origin only; see --cors-origin)" : corsOrigins.map((origin) => (typeof origin === "string" ? origin : "any localhost")).join(", ");
    say(`web: ${page} at /; pages of other origins allowed: ${origins}`);
    const routes = app.http?.routes() ?? [];
    if (routes.length > 0) say(`HTTP actions under ${options.httpPath ?? HTTP_ACTIONS_PATH_DEFAULT}: ${routes.join(", ")}`);
    if (role !== "writer" && role !== "fleet" && adminKey === null) say("warning: no CAIRN_ADMIN_KEY: this node cannot forward writes to the writer nor take wake hints");
    say(`node ${nodeId} ${node.role() === "fleet" ? "is a fleet node" : `is the ${node.role()}`}; serving at ${node.url} (sync at ${node.url.replace(/^http/, "ws")}api/sync), pid ${process.pid}. Ctrl-C or \`kill ${process.pid}\` stops.`);
    if (adminKey !== null) say(`dashboard: ${node.url}_dashboard (log in with CAIRN_ADMIN_KEY)`);
    const signal = await stopRequested;
    say(`stopping (${signal}): draining requests, ending sessions, releasing leases`);
    await node.stop();
  } finally {
    await store.close();
  }
}

type ServeRole = "writer" | "replica" | "standby" | "fleet";

function roleOf(options: ServeOptions): ServeRole {
  if (options.fleet) {
    const other = options.replica ? "--replica" : options.standby ? "--standby" : options.takeover ? "--takeover" : null;
    if (other !== null) throw new CairnError("INVALID_ARGUMENT", `--fleet cannot be combined with ${other}: a fleet node writes its share of the shards and follows the rest by itself`);
    if (process.env["CAIRN_ADMIN_KEY"] === undefined || process.env["CAIRN_ADMIN_KEY"] === "") {
      throw new CairnError("INVALID_ARGUMENT", "--fleet needs CAIRN_ADMIN_KEY (the same on every node): fleet nodes forward writes and wake hints to each other as admin calls");
    }
    return "fleet";
  }
  if (options.beatMs !== undefined || options.presenceTtlMs !== undefined) throw new CairnError("INVALID_ARGUMENT", "--beat-ms and --presence-ttl-ms go with --fleet");
  if (options.replica && options.standby) throw new CairnError("INVALID_ARGUMENT", "give --replica or --standby, not both (--standby is --replica --takeover)");
  if (options.takeover && !options.replica) throw new CairnError("INVALID_ARGUMENT", "--takeover goes with --replica (a writer takes over anyway; --standby implies it)");
  return options.standby ? "standby" : options.replica ? "replica" : "writer";
}

/** --engine-tuning: JSON checked against the engine's tuning schema before anything opens. */
function parseEngineTuning(text: string | undefined): Partial<ShardEngineTuning> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CairnError("INVALID_ARGUMENT", `--engine-tuning must be a JSON object, not ${JSON.stringify(text)}`);
  }
  resolveTuning(parsed);
  return parsed as Partial<ShardEngineTuning>;
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

/** With --jwks-url, the key set's first fetch is awaited: a provider that is down is a warning, not a failed start (RemoteJwks.start says why). */
