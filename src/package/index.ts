/**
 * `cairn`: what an app imports to declare its schema and functions. The server's own
 * machinery (the runtime, the catalog, the loader) is not here: it is `cairn/server`'s.
 */
export { v, type Id, type Infer, type ObjectShape, type Validator } from "../functions/index.js";
export { defineSchema, defineTable, type AnySchema, type Doc, type NewDoc, type SchemaDefinition, type TableDefinition, type TableNames } from "../functions/index.js";
export {
  action,
  functionsFor,
  internalAction,
  internalMutation,
  internalQuery,
  mutation,
  query,
  type ActionCtx,
  type Auth,
  type DatabaseReaderOf,
  type DatabaseWriterOf,
  type FunctionKind,
  type MutationCtx,
  type QueryCtx,
  type RegisteredFunction,
  type UserIdentity,
} from "../functions/index.js";
export type { FilterBuilder, FilterExpression, FilterOperand, IndexRangeBuilder, PaginationOptions, PaginationResult, QueryChain, SearchFilterBuilder, SearchQuery } from "../functions/index.js";
export { AppError, paginationOptsValidator, paginationResultValidator, type AppModule } from "../functions/index.js";
export { cronJobs, type CronJobs, type IntervalSpec, type Scheduler, type ScheduledJob, type JobState } from "../functions/index.js";
export { httpAction, httpRouter, type HttpAction, type HttpActionHandler, type HttpMethod, type HttpRouter, type HttpRouteSpec } from "../functions/index.js";
