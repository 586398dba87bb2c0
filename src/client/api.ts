import { invalidArgument } from "../base/index.js";
import type { FunctionKind, RegisteredFunction } from "../functions/index.js";

/**
 * Typed references to an app's functions, with no code generation: the app's
 * `functions` object is imported as a type only, and `apiOf` returns a Proxy whose
 * members are references named by path ("messages:list"). The kind, argument and result
 * types ride along as phantom types, so `client.query(api.messages.send, …)` (a mutation)
 * and wrong arguments fail to type-check, while at run time a reference is just its path.
 */

declare const kindType: unique symbol;
declare const argsType: unique symbol;
declare const resultType: unique symbol;

/** A function of an app, named `module:name`; its kind, arguments and result are types only. */
export interface FunctionReference<Kind extends FunctionKind = FunctionKind, Args = any, Result = any> {
  readonly path: string;
  readonly [kindType]?: Kind;
  readonly [argsType]?: Args;
  readonly [resultType]?: Result;
}

export type QueryReference = FunctionReference<"query">;
export type MutationReference = FunctionReference<"mutation">;
export type ActionReference = FunctionReference<"action">;

export type ArgsOf<Ref> = Ref extends FunctionReference<FunctionKind, infer Args, any> ? Args : never;
export type ResultOf<Ref> = Ref extends FunctionReference<FunctionKind, any, infer Result> ? Result : never;

/** The arguments parameter: optional when the function takes none (or only optional ones). */
export type ArgsParameter<Ref> = {} extends ArgsOf<Ref> ? [args?: ArgsOf<Ref>] : [args: ArgsOf<Ref>];

/**
 * The references of an app's `functions` (`{ [module]: { [name]: RegisteredFunction } }`).
 * Members that are not registered functions are left out, and so are internal
 * functions (their visibility is part of their type): only the server and admin calls
 * reach them, and the server answers a client's call to one with FUNCTION_NOT_FOUND.
 */
export type ApiOf<Functions> = {
  readonly [Module in keyof Functions & string]: ModuleApi<Functions[Module]>;
};

type ModuleApi<Module> = {
  readonly [Name in keyof Module & string as Module[Name] extends RegisteredFunction<any, any, any, "public"> ? Name : never]: ReferenceTo<
    Module[Name]
  >;
};

type ReferenceTo<Registered> =
  Registered extends RegisteredFunction<infer Kind extends FunctionKind, infer Args, infer Result>
    ? FunctionReference<Kind, Args, Awaited<Result>>
    : never;

/** The reference to the function at `path` ("module:name"), typed by hand. */
export function functionReference<Kind extends FunctionKind, Args = any, Result = any>(
  path: string,
): FunctionReference<Kind, Args, Result> {
  const separator = path.indexOf(":");
  if (separator <= 0 || separator === path.length - 1 || path.indexOf(":", separator + 1) !== -1) {
    throw invalidArgument(`a function path is "module:name", not ${JSON.stringify(path)}`, { path });
  }
  return Object.freeze({ path });
}

/**
 * `api.module.name` is the reference with path "module:name". Usage:
 * `import type { functions } from "./app.js"; const api = apiOf<typeof functions>();`.
 * References are made once per path, so the same member is the same object.
 */
export function apiOf<Functions>(): ApiOf<Functions> {
  const modules = new Map<string, object>();
  return new Proxy(Object.create(null) as object, {
    get(_target, module) {
      if (typeof module !== "string") return undefined;
      let functions = modules.get(module);
      if (functions === undefined) {
        functions = moduleProxy(module);
        modules.set(module, functions);
      }
      return functions;
    },
  }) as ApiOf<Functions>;
}

function moduleProxy(module: string): object {
  const references = new Map<string, FunctionReference>();
  return new Proxy(Object.create(null) as object, {
    get(_target, name) {
      // Symbols are asked for by inspectors and `await` (Symbol.toStringTag, then …), never functions.
      if (typeof name !== "string") return undefined;
      let reference = references.get(name);
      if (reference === undefined) {
        reference = functionReference(`${module}:${name}`);
        references.set(name, reference);
      }
      return reference;
    },
  });
}
