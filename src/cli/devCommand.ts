import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { CairnError, systemClock, systemRandom } from "../base/index.js";
import { loadApp, type App } from "../functions/index.js";
import { assertConditionalWrites, openObjectStore } from "../objectstore/index.js";
import { LOCALHOST_ORIGINS, localNodeId, LoginCodes, parseCorsOrigins, startNode, type RunningNode } from "../server/index.js";
import { buildWebApp } from "./buildWebApp.js";
import { markDevBuild } from "./devPageReload.js";
import { lockLocalDirectory } from "./localDirectoryLock.js";
import { nodeLogging, type LogFormat } from "./logFormat.js";
import { progressReporter } from "./progressReporter.js";
import { ProjectWatcher } from "./ProjectWatcher.js";
import { stopSignal } from "./stopSignal.js";
import { tokenVerifierOf, type AuthFlags } from "./tokenVerifierOf.js";
import { TypeChecker } from "./TypeChecker.js";
import { devAdminKey } from "./devAdminKey.js";
import { openInBrowser } from "./openInBrowser.js";

export interface DevOptions extends AuthFlags {
  readonly app: string;
  readonly web: string;
  readonly store: string;
  readonly local: string;
  readonly port: number;
  readonly host: string;
  readonly corsOrigin?: readonly string[];
  /** --http-path: where the app's HTTP actions are served (default /http). */
  readonly httpPath?: string;
  /** --file-max-mib: the largest stored file (default 1 GiB). */
  readonly fileMaxMib?: number;
  /** commander's --no-typecheck. */
  readonly typecheck?: boolean;
  /** --log-format (default text). */
  readonly logFormat?: LogFormat;
  /** --open: open the dashboard in the desktop's browser, logged in. */
  readonly open?: boolean;
}

/** Where `cairn dev` writes the page it builds from --web (served as the node's static directory). */
export const DEV_WEB_OUTPUT = ".cairn/web";

/**
 * `cairn dev`: serves the project's app on the embedded directory store and keeps it
 * current. On every change to the app's sources the app is compiled and loaded afresh
 * and swapped into the running node (`RunningNode.reloadApp`): live subscriptions re-run
 * on the new code. A change that fails to compile, or a schema change the deployment
 * refuses, is printed and the last good version keeps serving. The page in --web is
 * rebuilt on its changes and served at `/`; TypeScript checks run beside it (TypeChecker).
 */
export async function devCommand(options: DevOptions): Promise<void> {
  const logging = nodeLogging(options.logFormat ?? "text", systemClock);
  const say = logging.log;
  const project = process.cwd();
  const appPath = resolve(options.app);
  const webDirectory = resolve(options.web);
  if (!existsSync(appPath)) throw new CairnError("INVALID_ARGUMENT", `no app at ${appPath}: give --app <file>, or run \`cairn init\` to scaffold a project`);
  const corsOrigins = options.corsOrigin === undefined ? [LOCALHOST_ORIGINS] : parseCorsOrigins(options.corsOrigin);
  const verifier = await tokenVerifierOf(options, say);
  const stopRequested = stopSignal(say);
  const localLock = await lockLocalDirectory(options.local);
  const store = await openObjectStore(options.store);
  let node: RunningNode | null = null;
  let watcher: ProjectWatcher | null = null;
  let checker: TypeChecker | null = null;
  try {
    await assertConditionalWrites(store);
    const webOutput = resolve(DEV_WEB_OUTPUT);
    const hasWeb = existsSync(join(webDirectory, "index.html"));
    let builds = 0;
    const rebuildWeb = async () => {
      try {
        const built = await buildWebApp(webDirectory, webOutput, { minify: false });
        markDevBuild(webOutput, `${process.pid}-${++builds}`);
        say(`page built: ${built.assets.join(", ") || "index.html"}${builds > 1 ? " (open pages reload)" : ""}`);
      } catch (error) {
        say(`the page failed to build; the last good build keeps serving:\n${(error as Error).message}`);
        if (!existsSync(join(webOutput, "index.html"))) writeBuildFailedPage(webOutput, (error as Error).message);
      }
    };
    if (hasWeb) await rebuildWeb();
    else say(`no page: ${webDirectory} has no index.html (the node serves its status page at /)`);

    let app = await loadUntilGood(appPath, say, stopRequested);
    if (app === null) return;
    const nodeId = localNodeId(options.local, systemRandom);
    // The dashboard's key: the environment's, or one kept in the local directory (never printed).
    const given = process.env["CAIRN_ADMIN_KEY"] || null;
    const admin = given !== null ? { key: given, path: null } : devAdminKey(options.local, systemRandom);
    const loginCodes = new LoginCodes(systemClock, systemRandom);
    node = await startNode({
      role: "writer",
      store,
      localDirectory: options.local,
      app,
      nodeId,
      port: options.port,
      host: options.host,
      adminKey: admin.key,
      loginCodes,
      verifier,
      webApp: null,
      staticDir: hasWeb ? webOutput : null,
      corsOrigins,
      ...(options.httpPath !== undefined ? { httpActionsPath: options.httpPath } : {}),
      ...(options.fileMaxMib !== undefined ? { fileBytesMax: options.fileMaxMib * 1024 * 1024 } : {}),
      log: say,
      ...(logging.onFunctionLog !== undefined ? { onFunctionLog: logging.onFunctionLog } : {}),
      echoFunctionConsole: logging.echoFunctionConsole,
      onEngineEvent: progressReporter(say),
    });
    const running = node;
    say(`app ${appPath}: ${app.paths.length} function(s)`);
    if (options.typecheck !== false) checker = TypeChecker.start(project, say);

    const reloadApp = async () => {
      let next: App;
      try {
        next = await loadApp(appPath);
      } catch (error) {
        say(`the app failed to load; the last good version keeps serving:\n${(error as Error).message}`);
        return;
      }
      try {
        await running.reloadApp(next);
        app = next;
      } catch (error) {
        const code = (error as { code?: string }).code;
        say(`the deployment refused the new app${code ? ` [${code}]` : ""}; the last good version keeps serving:\n${(error as Error).message}`);
      }
    };
    watcher = new ProjectWatcher(
      project,
      systemClock,
      async (paths) => {
        const webChanged = hasWeb && paths.some((path) => path.startsWith(webDirectory + sep));
        const appChanged = paths.some((path) => !path.startsWith(webDirectory + sep));
        if (appChanged) await reloadApp();
        if (webChanged) await rebuildWeb();
      },
      (error) => say(`watching ${project} failed: ${error.message}`),
    );
    await watcher.ready();
    say(`dev: serving at ${running.url}${hasWeb ? " (the page from " + options.web + ")" : ""}, sync at ${running.url.replace(/^http/, "ws")}api/sync; watching ${project} for changes. Ctrl-C stops.`);
    // A one-time code, not the key: the link logs the dashboard in once and is spent.
    const dashboardLink = `${running.url}_dashboard#login=${loginCodes.issue()}`;
    say(`dashboard: ${dashboardLink} (a one-time login link; afterwards log in with the admin key ${admin.path === null ? "in CAIRN_ADMIN_KEY" : `in ${admin.path}`})`);
    if (options.open === true) openInBrowser(dashboardLink, say);
    const signal = await stopRequested;
    say(`stopping (${signal})`);
  } finally {
    await watcher?.close();
    await checker?.stop();
    await node?.stop();
    await store.close();
    await localLock.release();
  }
  say("stopped");
}

/** Loads the app; while it fails, prints why and waits for a change to its folder (or a stop). */
async function loadUntilGood(appPath: string, say: (line: string) => void, stopRequested: Promise<NodeJS.Signals>): Promise<App | null> {
  for (;;) {
    try {
      return await loadApp(appPath);
    } catch (error) {
      say(`the app failed to load; fix it and save (the node starts once it loads):\n${(error as Error).message}`);
    }
    let changed!: () => void;
    const change = new Promise<void>((done) => (changed = done));
    const watcher = new ProjectWatcher(process.cwd(), systemClock, async () => changed(), () => changed());
    await watcher.ready();
    const stopped = await Promise.race([change.then(() => false), stopRequested.then(() => true)]);
    await watcher.close();
    if (stopped) return null;
  }
}

function writeBuildFailedPage(directory: string, message: string): void {
  mkdirSync(directory, { recursive: true });
  const escaped = message.replace(/[&<>]/g, (character) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[character]!);
  writeFileSync(join(directory, "index.html"), `<!doctype html><meta charset="utf-8"><title>Build failed</title><h1>The page failed to build</h1><pre>${escaped}</pre><p>Fix it and save: cairn dev rebuilds it.</p>`);
}
