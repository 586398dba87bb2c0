import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CairnError } from "../base/index.js";
import { browserBundle } from "./browserBundle.js";

/**
 * The dashboard's three files (`/_dashboard`, its script and its stylesheet). They carry
 * no deployment data: the page asks the admin API for everything, with the key the
 * person typed in, so they are served to anyone.
 *
 * The page's sources are src/dashboard/ (DESIGN.md §1), which tsc leaves out: it has a
 * tsconfig of its own (the DOM, Preact's JSX). In the published package its files are
 * prebuilt (minified) into dist/dashboard/ by scripts/buildPackage.mjs, next to this
 * compiled file; in a checkout run from src/ they are built in memory from the sources
 * with esbuild, once per process. The page imports the client library as `cairn/client`, as an app
 * would (appImports maps it onto the running Cairn's public entry).
 */
export interface DashboardFiles {
  readonly html: Buffer;
  readonly script: Buffer;
  readonly stylesheet: Buffer;
}

/** The prebuilt files' names in dist/dashboard/ (and the URLs' last parts under /_dashboard/). */
export const DASHBOARD_FILE_NAMES = { html: "index.html", script: "app.js", stylesheet: "app.css" } as const;

/** The dashboard beside this file's layer: the prebuilt files in the package (dist/dashboard/), the sources in a checkout (src/dashboard/). */
const DASHBOARD_DIRECTORY = fileURLToPath(new URL("../dashboard/", import.meta.url));

let loaded: Promise<DashboardFiles> | null = null;

/** The dashboard's files: the prebuilt ones if this Cairn has them, else built from the sources (once per process). */
export function dashboardFiles(): Promise<DashboardFiles> {
  if (loaded === null) {
    loaded = existsSync(DASHBOARD_DIRECTORY + DASHBOARD_FILE_NAMES.script) ? Promise.resolve(readPrebuilt()) : buildDashboard();
    loaded.catch(() => (loaded = null));
  }
  return loaded;
}

function readPrebuilt(): DashboardFiles {
  return {
    html: readFileSync(DASHBOARD_DIRECTORY + DASHBOARD_FILE_NAMES.html),
    script: readFileSync(DASHBOARD_DIRECTORY + DASHBOARD_FILE_NAMES.script),
    stylesheet: readFileSync(DASHBOARD_DIRECTORY + DASHBOARD_FILE_NAMES.stylesheet),
  };
}

/**
 * Builds the files from the sources in `sources` (default src/dashboard/ beside this
 * file; the package build passes the checkout's), minified: the script from main.tsx
 * (Preact's automatic JSX runtime, uPlot, the client library), the stylesheet from
 * app.css (its `@import`s inlined). APP_LOAD_FAILED if they are missing or do not build.
 */
export async function buildDashboard(sources: string = DASHBOARD_DIRECTORY): Promise<DashboardFiles> {
  const directory = sources.endsWith("/") ? sources : `${sources}/`;
  if (!existsSync(directory + "main.tsx")) {
    throw new CairnError("APP_LOAD_FAILED", `this Cairn has neither the prebuilt dashboard nor its sources in ${directory}`);
  }
  const [script, stylesheet] = await Promise.all([
    browserBundle(directory + "main.tsx", "the dashboard", { jsxImportSource: "preact" }),
    browserBundle(directory + "app.css", "the dashboard's stylesheet"),
  ]);
  return { html: readFileSync(directory + "index.html"), script, stylesheet };
}

