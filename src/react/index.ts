/**
 * Cairn's React bindings (`cairn/react`): a provider for the client, and hooks for live
 * queries, paginated queries, mutations (with optimistic updates), actions and the
 * connection state, typed from the app's functions through `apiOf` with no code
 * generation. React is a peer dependency; everything here runs in browsers.
 */
export { CairnProvider, useCairnClient, type CairnProviderProps } from "./CairnProvider.js";
export { useQuery, useQueryState, type ArgsOrSkip } from "./useQuery.js";
export type { QueryState } from "./QueryState.js";
export { useMutation } from "./useMutation.js";
export { useAction } from "./useAction.js";
export { useConnectionState } from "./useConnectionState.js";
export {
  usePaginatedQuery,
  type PaginatedQueryArgs,
  type PaginatedQueryItem,
  type PaginatedQueryReference,
  type UsePaginatedQueryResult,
} from "./usePaginatedQuery.js";
export type { PaginationStatus } from "./PaginatedPages.js";
