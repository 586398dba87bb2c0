/**
 * Type-level tests of the client API, checked by `tsc --noEmit` (not run by vitest: the
 * functions below are never called). Each `@ts-expect-error` line must fail to compile;
 * if the types stop catching the mistake, tsc reports the unused directive.
 */
import type { functions } from "../../demo/app.js";
import { apiOf, type ApiOf, type FunctionReference } from "../../src/client/api.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { internalMutation, internalQuery, query } from "../../src/functions/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}

export async function typedCalls(client: CairnClient): Promise<void> {
  const api = apiOf<typeof functions>();

  const messages = await client.query(api.messages.list, { channel: "general" });
  const bodies: string[] = messages.map((message) => message.body);
  const count: number = await client.query(api.counters.get, { name: "visits" });
  const next: number = await client.mutation(api.counters.increment, { name: "visits", by: 2 });
  void client.subscribe(api.messages.list, { channel: "general", limit: 10 }, (list) => list.map((message) => message.author));

  // @ts-expect-error a mutation is not a query
  await client.query(api.counters.increment, { name: "visits" });
  // @ts-expect-error a query is not a mutation
  await client.mutation(api.counters.get, { name: "visits" });
  // @ts-expect-error a query is not an action
  await client.action(api.counters.get, { name: "visits" });
  // @ts-expect-error a required argument is missing
  await client.query(api.messages.list, {});
  // @ts-expect-error an argument of the wrong type
  await client.query(api.messages.list, { channel: 1 });
  // @ts-expect-error the arguments are required
  await client.query(api.messages.list);
  // @ts-expect-error the result is a number, not a string
  const wrong: string = await client.query(api.counters.get, { name: "visits" });
  // @ts-expect-error no such function
  void api.messages.delete;
  // @ts-expect-error no such module
  void api.users;

  // A mutation function with an optimistic update, typed by both the mutation and the query.
  const send = client.mutation(api.messages.send).withOptimisticUpdate((store, args) => {
    const current = store.getQuery(api.messages.list, { channel: args.channel });
    if (current !== undefined) store.setQuery(api.messages.list, { channel: args.channel }, current);
    // @ts-expect-error an optimistic update reads queries only
    store.getQuery(api.messages.send, { channel: "x", author: "a", body: "b" });
    // @ts-expect-error the value set must be the query's result type
    store.setQuery(api.counters.get, { name: "x" }, "not a number");
    // @ts-expect-error the mutation's args have no such field
    void args.nothing;
  });
  const id: string = await send({ channel: "general", author: "ada", body: "hi" });
  // @ts-expect-error a mutation function takes the mutation's args
  await send({ channel: "general" });

  void [bodies, count, next, wrong, id];
}

const noArgs = query({ handler: async () => 1 });
const secret = internalQuery({ handler: async () => "only the server" });
const purge = internalMutation({ handler: async () => null });
type MiscApi = ApiOf<{ misc: { noArgs: typeof noArgs; secret: typeof secret; purge: typeof purge; LIMIT: number; helper: () => void } }>["misc"];

/** Members that are not registered functions are left out, and so are internal functions; a handler's promise is unwrapped. */
export function shapeOfApi(): void {
  assertType<Equal<keyof MiscApi, "noArgs">>();
  assertType<Equal<MiscApi["noArgs"], FunctionReference<"query", Record<string, never>, number>>>();
}

/** A function without arguments may be called without them. */
export async function optionalArgs(client: CairnClient, api: MiscApi): Promise<number> {
  // @ts-expect-error it takes no arguments
  await client.query(api.noArgs, { extra: 1 });
  return (await client.query(api.noArgs)) + (await client.query(api.noArgs, {}));
}
