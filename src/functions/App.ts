import { CairnError } from "../base/index.js";
import { isCronJobs, type CronDeclaration } from "./cronJobs.js";
import { isHttpRouter, type HttpRouter } from "./httpRouter.js";
import { isRegisteredFunction, type AnyFunction, type FunctionKind } from "./registration.js";
import { isSchemaDefinition, type AnySchema } from "./schema.js";
import { SYSTEM_MODULE, systemFunction } from "./systemFunctions.js";

/**
 * An app: one module exporting `schema` (from defineSchema) and `functions`, a map from
 * module name to that module's registered functions — typically
 * `functions = { messages, users }` over `import * as messages from "./messages.js"` —
 * addressed as `"messages:send"`. Exports of a module that are not registered functions
 * (helpers, constants) are ignored. An app may also export `http`, its HTTP actions'
 * router (httpRouter.ts), and `crons`, its cron jobs (cronJobs.ts).
 */
export interface AppModule {
  readonly schema: AnySchema;
  readonly functions: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly http?: HttpRouter;
  readonly crons?: unknown;
}

const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\/[A-Za-z_][A-Za-z0-9_]*)*$/;
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class App {
  private constructor(
    readonly schema: AnySchema,
    private readonly functions: ReadonlyMap<string, AnyFunction>,
    /** Where the app came from, for messages: a file path or "(inline)". */
    readonly source: string,
    /** The app's HTTP actions (null: it has none). */
    readonly http: HttpRouter | null,
    /** The app's cron jobs, each naming a mutation or action of the app. */
    readonly crons: readonly CronDeclaration[],
  ) {}

  /** Checks a loaded module's shape; SCHEMA_INVALID naming `source` and the problem. */
  static fromModule(module: unknown, source = "(inline)"): App {
    const exports = (typeof module === "object" && module !== null ? module : {}) as Record<string, unknown>;
    const schema = exports["schema"];
    if (!isSchemaDefinition(schema)) throw appInvalid(source, "it must export `schema`, made with defineSchema({...})");
    const map = exports["functions"];
    if (typeof map !== "object" || map === null) {
      throw appInvalid(source, "it must export `functions`, an object of modules: { messages: { list, send } }");
    }
    const functions = new Map<string, AnyFunction>();
    for (const [moduleName, members] of Object.entries(map)) {
      if (!MODULE_NAME.test(moduleName)) throw appInvalid(source, `module name ${JSON.stringify(moduleName)} is not an identifier path`);
      if (moduleName === SYSTEM_MODULE) throw appInvalid(source, `module name ${SYSTEM_MODULE} is reserved for Cairn's system functions`);
      // A flat map ({ list, send }) would otherwise be read as modules of no functions, and served as an app of none.
      if (isRegisteredFunction(members)) {
        throw appInvalid(
          source,
          `functions.${moduleName} is a ${members.kind}, not a module: group functions in modules, ` +
            `e.g. \`export const functions = { messages: { ${moduleName}, … } }\` (called as "messages:${moduleName}")`,
        );
      }
      if (typeof members !== "object" || members === null) throw appInvalid(source, `functions.${moduleName} must be an object of functions`);
      for (const [name, member] of Object.entries(members as Record<string, unknown>)) {
        if (!isRegisteredFunction(member)) continue;
        if (!FUNCTION_NAME.test(name)) throw appInvalid(source, `function name ${JSON.stringify(name)} in ${moduleName} is not an identifier`);
        functions.set(`${moduleName}:${name}`, member);
      }
    }
    const http = exports["http"];
    if (http !== undefined && !isHttpRouter(http)) throw appInvalid(source, "`http` must be a router made with httpRouter(), its routes added with http.route({...})");
    const crons = exports["crons"];
    if (crons !== undefined && !isCronJobs(crons)) throw appInvalid(source, "`crons` must be made with cronJobs(), its jobs added with crons.interval(...) or crons.cron(...)");
    const app = new App(schema, functions, source, http ?? null, crons?.entries ?? []);
    for (const cron of app.crons) {
      try {
        app.lookupSchedulable(cron.path);
      } catch (error) {
        throw appInvalid(source, `cron ${JSON.stringify(cron.name)}: ${(error as Error).message}`);
      }
    }
    return app;
  }

  get paths(): string[] {
    return [...this.functions.keys()].sort();
  }

  /** Every function with its path, in path order (the admin API lists them). */
  entries(): [string, AnyFunction][] {
    return [...this.functions.entries()].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  }

  /**
   * The function at `path`, which must be of `kind`; FUNCTION_NOT_FOUND for an unknown
   * path, another kind, or an internal function when `internal` calls are not allowed
   * (clients are told it does not exist, as for any name they cannot call).
   */
  lookup(path: unknown, kind: FunctionKind, options: { readonly internal: boolean }): AnyFunction {
    const found = typeof path === "string" ? (this.functions.get(path) ?? systemFunction(path)) : undefined;
    if (found === undefined || (found.visibility === "internal" && !options.internal)) {
      throw new CairnError("FUNCTION_NOT_FOUND", `no ${options.internal ? "" : "public "}function ${JSON.stringify(path)} in the app`, {
        details: { path },
      });
    }
    if (found.kind !== kind) {
      throw new CairnError("FUNCTION_NOT_FOUND", `${String(path)} is ${found.kind === "action" ? "an" : "a"} ${found.kind}, not ${kind === "action" ? "an" : "a"} ${kind}`, {
        details: { path, kind: found.kind },
      });
    }
    return found;
  }

  /**
   * The mutation or action at `path` (internal ones too) that a job may run:
   * FUNCTION_NOT_FOUND for an unknown path or a query (a query changes nothing, so
   * scheduling one is a mistake).
   */
  lookupSchedulable(path: unknown): AnyFunction {
    const found = typeof path === "string" ? (this.functions.get(path) ?? systemFunction(path)) : undefined;
    if (found === undefined || found.kind === "query") {
      throw new CairnError("FUNCTION_NOT_FOUND", found === undefined ? `no function ${JSON.stringify(path)} in the app to schedule` : `${String(path)} is a query: only mutations and actions are scheduled`, {
        details: { path },
      });
    }
    return found;
  }
}

function appInvalid(source: string, problem: string): CairnError {
  return new CairnError("SCHEMA_INVALID", `app ${source}: ${problem}`, { details: { source } });
}
