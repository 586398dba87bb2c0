import { z } from "zod";
import { CairnError } from "../base/index.js";
import type { DocumentId } from "../model/index.js";
import type { Catalog } from "./catalog.js";
import type { QueryChain } from "./QueryChain.js";
import type { SCHEDULED_FUNCTIONS_TABLE, ScheduledJob } from "./scheduledFunctions.js";
import type { STORAGE_TABLE, StoredFile } from "./storedFiles.js";
import type { Scheduler } from "./Scheduler.js";
import type { StorageActionWriter, StorageReader, StorageWriter } from "./FileStorage.js";
import type { AnySchema, Doc, NewDoc, TableNames } from "./schema.js";
import type { Id, ObjectShape } from "./values.js";

/**
 * Registering functions: `query`, `mutation`, `action` and their `internal*` variants
 * (callable only from other functions and by admins, never by clients). A registered
 * function is plain data: its kind, visibility, argument validator (an object shape of
 * validators), optional return validator, and handler.
 *
 * `functionsFor(schema)` returns the same builders typed by the schema, so `ctx.db`
 * knows each table's document type; the top-level builders are untyped over tables.
 */
export type FunctionKind = "query" | "mutation" | "action";
export type Visibility = "public" | "internal";

const FUNCTION_BRAND = Symbol.for("cairn.function");

/** Who is calling, as the auth layer verified it (null: anonymous). */
export interface UserIdentity {
  readonly subject: string;
  readonly issuer?: string;
  readonly [claim: string]: unknown;
}

export interface Auth {
  getUserIdentity(): Promise<UserIdentity | null>;
}

export interface DatabaseReaderOf<S extends AnySchema> {
  get<T extends TableNames<S>>(id: Id<T>): Promise<Doc<S, T> | null>;
  query<T extends TableNames<S>>(table: T): QueryChain<Doc<S, T>>;
  /** Cairn's system tables: `_scheduled_functions` (a job's state, by the id ctx.scheduler returned). */
  readonly system: {
    get(id: Id<typeof SCHEDULED_FUNCTIONS_TABLE>): Promise<ScheduledJob | null>;
    get(id: Id<typeof STORAGE_TABLE>): Promise<StoredFile | null>;
    query(table: typeof SCHEDULED_FUNCTIONS_TABLE): QueryChain<ScheduledJob>;
    query(table: typeof STORAGE_TABLE): QueryChain<StoredFile>;
  };
}

export interface DatabaseWriterOf<S extends AnySchema> extends DatabaseReaderOf<S> {
  insert<T extends TableNames<S>>(table: T, value: NewDoc<S, T>): Promise<Id<T>>;
  patch<T extends TableNames<S>>(id: Id<T>, value: Partial<NewDoc<S, T>>): Promise<void>;
  replace<T extends TableNames<S>>(id: Id<T>, value: NewDoc<S, T>): Promise<void>;
  delete(id: Id<TableNames<S>> | DocumentId): Promise<void>;
}

interface DeterministicContext {
  readonly auth: Auth;
  /** Milliseconds since the Unix epoch, fixed for the run (a re-run after a conflict sees the same). */
  now(): number;
  /** A float in [0, 1) from a generator seeded per call (the same sequence in every re-run). Not for secrets. */
  random(): number;
}

export interface QueryCtx<S extends AnySchema = AnySchema> extends DeterministicContext {
  readonly db: DatabaseReaderOf<S>;
  /** Stored files' URLs and metadata (FileStorage.ts). */
  readonly storage: StorageReader;
}

export interface MutationCtx<S extends AnySchema = AnySchema> extends DeterministicContext {
  readonly db: DatabaseWriterOf<S>;
  /** Schedules mutations and actions, atomically with this mutation (Scheduler.ts). */
  readonly scheduler: Scheduler;
  /** Stored files: URLs, metadata, upload URLs, deletion in this mutation's commit. */
  readonly storage: StorageWriter;
}

export interface ActionCtx {
  readonly auth: Auth;
  /** Schedules mutations and actions (each call commits on its own). */
  readonly scheduler: Scheduler;
  /** Stored files, their bytes too: store a Blob, read one back. */
  readonly storage: StorageActionWriter;
  runQuery(path: string, args?: Record<string, unknown>): Promise<unknown>;
  runMutation(path: string, args?: Record<string, unknown>): Promise<unknown>;
  runAction(path: string, args?: Record<string, unknown>): Promise<unknown>;
}

type ContextOf<Kind extends FunctionKind, S extends AnySchema> = Kind extends "query"
  ? QueryCtx<S>
  : Kind extends "mutation"
    ? MutationCtx<S>
    : ActionCtx;

export interface FunctionDefinition<Kind extends FunctionKind, S extends AnySchema, Shape extends ObjectShape, Result> {
  readonly args?: Shape;
  readonly returns?: z.ZodType<Result>;
  /**
   * Mutations only: which shard the mutation runs on — the lane of this argument's value
   * (or of what the function returns for the arguments), hashed like a shard-key field
   * (DESIGN.md §10). Without it a mutation runs on shard 0. Every document it reads or
   * writes must live on that shard (else CROSS_SHARD_MUTATION, nothing written).
   */
  readonly shardBy?: Kind extends "mutation" ? (keyof Shape & string) | ((args: z.output<z.ZodObject<Shape>>) => unknown) : never;
  readonly handler: (ctx: ContextOf<Kind, S>, args: z.output<z.ZodObject<Shape>>) => Result | Promise<Result>;
}

/** How a mutation picks its shard: an argument's value, or a function of the arguments. */
export type ShardBy =
  | { readonly kind: "arg"; readonly name: string }
  | { readonly kind: "function"; readonly of: (args: unknown) => unknown }
  /** The system functions' (systemFunctions.ts): the route itself, from the arguments and the catalog (null: shard 0). */
  | { readonly kind: "route"; readonly of: (args: unknown, catalog: Catalog) => Uint8Array | null };

export interface RegisteredFunction<Kind extends FunctionKind = FunctionKind, Args = unknown, Result = unknown, V extends Visibility = Visibility> {
  readonly kind: Kind;
  /** A type too, so that a client's typed API (`apiOf`) leaves internal functions out. */
  readonly visibility: V;
  readonly args: z.ZodType<Args>;
  readonly returns: z.ZodType<Result> | null;
  /** Mutations: see FunctionDefinition.shardBy; null: shard 0. */
  readonly shardBy: ShardBy | null;
  readonly handler: (ctx: never, args: Args) => Result | Promise<Result>;
}

export type AnyFunction = RegisteredFunction;

function builder<Kind extends FunctionKind, S extends AnySchema, V extends Visibility>(kind: Kind, visibility: V) {
  return <Shape extends ObjectShape = Record<never, never>, Result = unknown>(
    definition: FunctionDefinition<Kind, S, Shape, Result>,
  ): RegisteredFunction<Kind, z.output<z.ZodObject<Shape>>, Result, V> => {
    if (typeof definition !== "object" || definition === null || typeof definition.handler !== "function") {
      throw new CairnError("SCHEMA_INVALID", `${visibility === "internal" ? "internal " : ""}${kind}(...) takes { args?, returns?, handler }`);
    }
    const shape = definition.args ?? {};
    if (typeof shape !== "object" || shape === null || Array.isArray(shape)) {
      throw new CairnError("SCHEMA_INVALID", `${kind} args must be an object of validators ({ name: v.string() })`);
    }
    const registered = {
      kind,
      visibility,
      args: z.strictObject(shape as Shape),
      returns: definition.returns ?? null,
      shardBy: shardByOf(kind, shape, definition.shardBy),
      handler: definition.handler,
      [FUNCTION_BRAND]: true,
    };
    return registered as unknown as RegisteredFunction<Kind, z.output<z.ZodObject<Shape>>, Result, V>;
  };
}

function shardByOf(kind: FunctionKind, shape: object, shardBy: unknown): ShardBy | null {
  if (shardBy === undefined) return null;
  if (kind !== "mutation") throw new CairnError("SCHEMA_INVALID", `shardBy is for mutations; a ${kind} reads or runs across every shard`);
  if (typeof shardBy === "function") return { kind: "function", of: shardBy as (args: unknown) => unknown };
  if (typeof shardBy === "string" && Object.hasOwn(shape, shardBy)) return { kind: "arg", name: shardBy };
  throw new CairnError("SCHEMA_INVALID", `mutation shardBy must name one of its arguments (${Object.keys(shape).join(", ") || "it has none"}) or be a function of them, not ${JSON.stringify(shardBy)}`);
}

export function functionsFor<S extends AnySchema>(_schema?: S) {
  return {
    query: builder<"query", S, "public">("query", "public"),
    internalQuery: builder<"query", S, "internal">("query", "internal"),
    mutation: builder<"mutation", S, "public">("mutation", "public"),
    internalMutation: builder<"mutation", S, "internal">("mutation", "internal"),
    action: builder<"action", S, "public">("action", "public"),
    internalAction: builder<"action", S, "internal">("action", "internal"),
  };
}

export const { query, internalQuery, mutation, internalMutation, action, internalAction } = functionsFor<AnySchema>();

export function isRegisteredFunction(value: unknown): value is AnyFunction {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[FUNCTION_BRAND] === true;
}
