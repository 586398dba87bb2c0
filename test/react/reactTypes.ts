/**
 * Type-level tests of cairn/react, checked by `tsc --noEmit` (never run: hooks need a
 * component). Each `@ts-expect-error` line must fail to compile; if the types stop
 * catching the mistake, tsc reports the unused directive.
 */
import { apiOf } from "../../src/client/index.js";
import { functionsFor, defineSchema, defineTable, v, type Id } from "../../src/functions/index.js";
import { useAction, useMutation, usePaginatedQuery, useQuery, useQueryState } from "../../src/react/index.js";
import type { functions } from "./tasksApp.js";

const api = apiOf<typeof functions>();

const schema = defineSchema({ notes: defineTable({ body: v.string() }) });
const { query, internalQuery, action } = functionsFor(schema);
const misc = {
  /** Paginated, but its paginationOpts cannot take the endCursor the hook sends. */
  oldStylePage: query({
    args: { paginationOpts: v.object({ cursor: v.union(v.string(), v.null()), numItems: v.number() }) },
    handler: async (ctx, { paginationOpts }) => ctx.db.query("notes").paginate(paginationOpts),
  }),
  secret: internalQuery({ handler: async () => "internal" }),
  ping: action({ args: { to: v.string() }, handler: async (_ctx, { to }) => `pong ${to}` }),
};
const miscApi = apiOf<{ misc: typeof misc }>();

export function TypedHooks(id: Id<"tasks">): void {
  const task = useQuery(api.tasks.get, { id });
  const title: string | undefined = task?.title;
  const skipped = useQuery(api.tasks.get, "skip");
  const ranks: number[] | undefined = useQuery(api.tasks.ranks);
  const state = useQueryState(api.likes.get, { name: "x" });
  const count: number = state.status === "success" ? state.value : 0;
  const code: string = state.status === "error" ? state.error.code : "";

  // @ts-expect-error a mutation is not a query
  useQuery(api.tasks.add, { title: "t", rank: 1 });
  // @ts-expect-error the arguments are required
  useQuery(api.tasks.get);
  // @ts-expect-error an argument of the wrong type
  useQuery(api.likes.get, { name: 1 });
  // @ts-expect-error the result is a number
  const wrong: string | undefined = useQuery(api.likes.get, { name: "x" });

  const add = useMutation(api.tasks.add);
  void add({ title: "t", rank: 1 });
  // @ts-expect-error a query is not a mutation
  useMutation(api.tasks.get);
  const bump = useMutation(api.likes.bump).withOptimisticUpdate((store, args) => {
    const current = store.getQuery(api.likes.get, { name: args.name });
    if (current !== undefined) store.setQuery(api.likes.get, { name: args.name }, current + 1);
    // @ts-expect-error the value set must be the query's result type
    store.setQuery(api.likes.get, { name: args.name }, "many");
  });
  // @ts-expect-error a mutation function takes the mutation's args
  void bump({ title: "t" });

  const ping = useAction(miscApi.misc.ping);
  const pong: Promise<string> = ping({ to: "x" });
  // @ts-expect-error a mutation is not an action
  useAction(api.tasks.add);

  const { results, status, loadMore } = usePaginatedQuery(api.tasks.page, {}, { initialNumItems: 10 });
  const firstRank: number | undefined = results[0]?.rank;
  const done: boolean = status === "Exhausted";
  loadMore(10);
  usePaginatedQuery(api.tasks.page, "skip", { initialNumItems: 10 });
  // @ts-expect-error not a paginated query
  usePaginatedQuery(api.tasks.ranks, {}, { initialNumItems: 10 });
  // @ts-expect-error its paginationOpts has no endCursor: declare it with paginationOptsValidator
  usePaginatedQuery(miscApi.misc.oldStylePage, {}, { initialNumItems: 10 });
  // @ts-expect-error internal functions are not on the client's API
  void miscApi.misc.secret;

  void [title, skipped, ranks, count, code, wrong, pong, firstRank, done];
}
