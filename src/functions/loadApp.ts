import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { CairnError } from "../base/index.js";
import { App } from "./App.js";

/**
 * Loads an app from a TypeScript (or JavaScript) module file. Cairn runs under tsx, whose
 * loader compiles the app's TypeScript on import, so the app shares this process's
 * modules. APP_LOAD_FAILED names the file and what went wrong (missing, a syntax or
 * import error, a throw while it is evaluated); SCHEMA_INVALID what is inconsistent.
 */
export async function loadApp(path: string): Promise<App> {
  const file = resolve(path);
  if (!existsSync(file)) throw new CairnError("APP_LOAD_FAILED", `app ${file}: no such file`, { details: { file } });
  let module: unknown;
  try {
    module = await import(pathToFileURL(file).href);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CairnError("APP_LOAD_FAILED", `app ${file} failed to load: ${message}`, { cause: error, details: { file } });
  }
  return App.fromModule(module, file);
}
