/**
 * The primitives below every layer: errors, the injected Clock and Random, every bound
 * (limits), and small helpers. Each layer above imports them from here.
 */
export { ConditionWaiters } from "./ConditionWaiters.js";
export { DEFAULT_LOCAL_DIRECTORY, DEFAULT_STORE_URL } from "./embeddedDeployment.js";
export { SortedMap } from "./SortedMap.js";
export { every, ManualClock, systemClock, type Clock, type Timer } from "./clock.js";
export { drained } from "./drained.js";
export { firstAfterTs } from "./firstAfterTs.js";
export { repeatEvery } from "./repeatEvery.js";
export {
  assert,
  CairnError,
  ERROR_CODES,
  ERROR_KINDS,
  errorKindOf,
  hasErrorCode,
  invalidArgument,
  isCasConflict,
  isStoreTransient,
  type CairnErrorOptions,
  type ErrorCode,
  type ErrorKind,
} from "./errors.js";
// Every bound is public: a layer names the one it enforces.
export * from "./limits.js";
export { prefetchInOrder } from "./prefetchInOrder.js";
export { randomHex, randomInt, SeededRandom, systemRandom, type Random } from "./random.js";
export { yieldToEventLoop } from "./yieldToEventLoop.js";
