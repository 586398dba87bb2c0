#!/usr/bin/env node
// Builds the published package into dist/: src/ compiled by tsc (ES modules and
// declarations), plus the plain-JavaScript worker entries and their declarations, which
// tsc does not copy, and the dashboard's page prebuilt (minified) into dist/dashboard/
// by the compiled DashboardAssets, so that an installed node serves it without Preact
// or uPlot (devDependencies). Run by `npm run build` and by `npm pack` ("prepack").
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });

let copied = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !/\.(mjs|d\.mts)$/.test(entry.name)) continue;
  const from = join(entry.parentPath, entry.name);
  const to = join(dist, relative(src, from));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied += 1;
}
// The compiled builder bundles the page against dist/'s own client library (cairn/client).
const { buildDashboard, DASHBOARD_FILE_NAMES } = await import(pathToFileURL(join(dist, "server", "DashboardAssets.js")).href);
const dashboard = await buildDashboard(join(src, "dashboard"));
mkdirSync(join(dist, "dashboard"), { recursive: true });
for (const [part, name] of Object.entries(DASHBOARD_FILE_NAMES)) writeFileSync(join(dist, "dashboard", name), dashboard[part]);
const sizes = Object.entries(DASHBOARD_FILE_NAMES).map(([part, name]) => `${name} ${dashboard[part].byteLength} B`);

process.stdout.write(`dist/ built: src/ compiled, ${copied} worker file(s) copied, dashboard prebuilt (${sizes.join(", ")})\n`);
