/**
 * Which table number each table name has, for the `v.id("table")` validators while one
 * validation runs.
 *
 * Why a dynamic scope: validators are built when the app's module is evaluated, before
 * the deployment's catalog assigns table numbers, and one process may run several apps
 * (tests do). Zod parses synchronously, so the runtime sets the scope around each
 * `safeParse` and every id check inside it sees that app's catalog. The scope lives on
 * `globalThis` under a registered symbol so that an app loaded through another copy of
 * this module (another loader) still sees it.
 */
export type TableNumberOf = (tableName: string) => number | undefined;

const SCOPE = Symbol.for("cairn.functions.idScope");

interface ScopeHolder {
  [SCOPE]?: TableNumberOf | null;
}

const holder = globalThis as ScopeHolder;

/** Runs `parse` (which must be synchronous) with `tables` as the id scope. */
export function withIdScope<T>(tables: TableNumberOf, parse: () => T): T {
  const previous = holder[SCOPE] ?? null;
  holder[SCOPE] = tables;
  try {
    return parse();
  } finally {
    holder[SCOPE] = previous;
  }
}

/** The table numbers of the validation running now; null outside any runtime validation. */
export function currentIdScope(): TableNumberOf | null {
  return holder[SCOPE] ?? null;
}
