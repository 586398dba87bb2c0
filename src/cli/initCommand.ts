import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError } from "../base/index.js";

/** The project `cairn init` copies: shipped with the package (package.json "files"). */
const TEMPLATE_DIRECTORY = fileURLToPath(new URL("../../templates/app", import.meta.url));
/** With --react, the page is this one (laid over the project's web/), a React app over cairn/react. */
const REACT_WEB_DIRECTORY = fileURLToPath(new URL("../../templates/react/web", import.meta.url));
/** What a React page needs beside Cairn, at the versions Cairn is tested with. */
const REACT_PACKAGES = { dependencies: ["react", "react-dom"], devDependencies: ["@types/react", "@types/react-dom"] } as const;
const OWN_PACKAGE = fileURLToPath(new URL("../../package.json", import.meta.url));

/** The scripts a scaffolded project runs Cairn with. */
export const PROJECT_SCRIPTS: Readonly<Record<string, string>> = {
  dev: "cairn dev",
  build: "cairn build",
  start: "cairn serve --app cairn/app.ts --static dist",
};

export interface InitOptions {
  /** Write into a folder that already has files (never over one of them). */
  readonly force?: boolean;
  /** The page as a React app (cairn/react) instead of plain TypeScript. */
  readonly react?: boolean;
}

/**
 * `cairn init [dir]`: scaffolds an app — its schema and functions in `cairn/`, a page in
 * `web/`, a tsconfig.json, and package.json with the scripts `dev`, `build` and `start`
 * and Cairn as a dependency (added to the folder's package.json if it has one, whose
 * other fields are kept). Refuses a folder with files in it unless --force, and never
 * overwrites a file: a clash is an error before anything is written.
 */
export async function initCommand(directory: string | undefined, options: InitOptions): Promise<void> {
  const say = (line: string) => process.stdout.write(`cairn: ${line}\n`);
  const target = resolve(directory ?? ".");
  const present = existsSync(target) ? readdirSync(target).filter((name) => !name.startsWith(".") && name !== "package.json" && name !== "node_modules" && name !== "package-lock.json") : [];
  if (present.length > 0 && options.force !== true) {
    throw new CairnError("INVALID_ARGUMENT", `${target} is not empty (${present.slice(0, 5).join(", ")}${present.length > 5 ? ", …" : ""}): give an empty or new folder, or --force to add the app beside what is there`);
  }
  const files = templateFiles(options.react === true);
  const clashes = files.filter((file) => existsSync(join(target, file.to)));
  if (clashes.length > 0) throw new CairnError("INVALID_ARGUMENT", `${target} already has ${clashes.map((file) => file.to).join(", ")}: nothing was written`);
  const packageJson = projectPackageJson(target, options.react === true);

  mkdirSync(target, { recursive: true });
  for (const file of files) {
    const to = join(target, file.to);
    mkdirSync(join(to, ".."), { recursive: true });
    cpSync(file.from, to);
  }
  writeFileAtomically(join(target, "package.json"), `${JSON.stringify(packageJson, null, 2)}\n`);
  const fromHere = relative(process.cwd(), target);
  const where = fromHere === "" ? "." : fromHere.startsWith("..") ? target : fromHere;
  say(`created an app in ${target}: cairn/ (schema and functions), web/ (the page${options.react === true ? ", in React" : ""}), tsconfig.json, package.json`);
  say("next:");
  if (where !== ".") say(`  cd ${where}`);
  say("  npm install        # Cairn, and TypeScript for cairn dev's type checks");
  say("  npm run dev        # serves the app and reloads it on every change");
}

/**
 * The files to copy, as (source, path in the project): the template, with `gitignore`
 * written as .gitignore (npm drops .gitignore files from packages), and with --react the
 * React page in place of the template's web/.
 */
function templateFiles(react: boolean): { readonly from: string; readonly to: string }[] {
  if (!existsSync(TEMPLATE_DIRECTORY)) throw new CairnError("INTERNAL", `this installation of cairn has no app template (${TEMPLATE_DIRECTORY})`);
  const files = filesUnder(TEMPLATE_DIRECTORY)
    .filter((file) => !(react && file.startsWith(`web${sep}`)))
    .map((file) => ({ from: join(TEMPLATE_DIRECTORY, file), to: file === "gitignore" ? ".gitignore" : file }));
  if (react) files.push(...filesUnder(REACT_WEB_DIRECTORY).map((file) => ({ from: join(REACT_WEB_DIRECTORY, file), to: join("web", file) })));
  return files.sort((a, b) => a.to.localeCompare(b.to));
}

function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(directory, join(entry.parentPath, entry.name)));
}

/** The folder's package.json (or a new one) with the project's scripts, module type and dependencies added where missing. */
function projectPackageJson(target: string, react: boolean): Record<string, unknown> {
  const path = join(target, "package.json");
  let existing: Record<string, unknown> = {};
  if (existsSync(path)) {
    try {
      existing = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    } catch (error) {
      throw new CairnError("INVALID_ARGUMENT", `${path} is not valid JSON (${(error as Error).message}): fix it first, nothing was written`);
    }
    if (typeof existing !== "object" || existing === null || Array.isArray(existing)) throw new CairnError("INVALID_ARGUMENT", `${path} is not a JSON object: nothing was written`);
  }
  const own = JSON.parse(readFileSync(OWN_PACKAGE, "utf8")) as { devDependencies?: Record<string, string> };
  const tested = (name: string, fallback: string) => `^${(own.devDependencies?.[name] ?? fallback).replace(/^[\^~]/, "")}`;
  const scripts = { ...PROJECT_SCRIPTS, ...(existing["scripts"] as Record<string, string> | undefined) };
  const reactDependencies = (names: readonly string[]) => (react ? Object.fromEntries(names.map((name) => [name, tested(name, "19.0.0")])) : {});
  const dependencies = { cairn: cairnDependency(), ...reactDependencies(REACT_PACKAGES.dependencies), ...(existing["dependencies"] as Record<string, string> | undefined) };
  const devDependencies = {
    typescript: tested("typescript", "5.9.0"),
    ...reactDependencies(REACT_PACKAGES.devDependencies),
    ...(existing["devDependencies"] as Record<string, string> | undefined),
  };
  return {
    name: packageName(basename(target)),
    version: "0.1.0",
    private: true,
    ...existing,
    type: existing["type"] ?? "module",
    scripts,
    dependencies,
    devDependencies,
  };
}

/**
 * How the new project depends on Cairn: as the project that holds this installation does
 * (a tarball or folder path made absolute), else on this installation's folder itself.
 * Never `^version` from the registry: the name `cairn` there is an unrelated package.
 */
function cairnDependency(): string {
  const packageDirectory = dirname(OWN_PACKAGE);
  const parts = packageDirectory.split(sep);
  const at = parts.lastIndexOf("node_modules");
  if (at > 0) {
    const holder = parts.slice(0, at).join(sep) || sep;
    try {
      const manifest = JSON.parse(readFileSync(join(holder, "package.json"), "utf8")) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
      const spec = manifest.dependencies?.["cairn"] ?? manifest.devDependencies?.["cairn"];
      if (spec !== undefined) return spec.startsWith("file:") ? `file:${resolve(holder, spec.slice(5))}` : spec;
    } catch {
      // No readable package.json above node_modules: fall back to the folder itself.
    }
  }
  return `file:${packageDirectory}`;
}

/** A valid npm package name from a folder's name. */
function packageName(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "");
  return name.length > 0 ? name.slice(0, 214) : "cairn-app";
}

function writeFileAtomically(path: string, text: string): void {
  const temporary = `${path}.cairn-init`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}
