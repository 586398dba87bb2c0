import { CairnError } from "../base/index.js";
import { validateValue, type ValueObject } from "../model/index.js";
import { cronOf, type CronSchedule } from "./scheduledFunctions.js";

/**
 * An app's crons: `export const crons = cronJobs()` with
 * `crons.interval("sweep", { minutes: 5 }, "tasks:sweep")` or
 * `crons.cron("report", "0 3 * * *", "reports:daily", { full: true })`. Each cron runs a
 * mutation or an action (internal ones too) once per tick. Its ticks are jobs of the
 * scheduler (scheduledFunctions.ts): shard 0's writer keeps exactly one pending tick per
 * declared cron (syncCrons), and a tick that ends schedules the next in the same commit,
 * so a tick runs once however often the writer fails over or restarts.
 *
 * Checked when declared (SCHEMA_INVALID): names are unique identifiers, intervals are
 * whole seconds of at least one, cron expressions parse (five fields, or six with
 * seconds; croner's syntax), arguments are Cairn values. The function itself is checked
 * when the app is loaded (it must exist and be a mutation or an action), its arguments
 * when the writer installs the cron.
 */
export interface CronDeclaration {
  readonly name: string;
  readonly path: string;
  readonly args: ValueObject;
  readonly schedule: CronSchedule;
}

export interface IntervalSpec {
  readonly seconds?: number;
  readonly minutes?: number;
  readonly hours?: number;
}

const CRONS_BRAND = Symbol.for("cairn.crons");
const CRON_NAME = /^[A-Za-z0-9_][A-Za-z0-9_ .:-]{0,63}$/;

export class CronJobs {
  readonly [CRONS_BRAND] = true;
  private readonly declared = new Map<string, CronDeclaration>();

  /** Runs `path` every interval, the first time one interval after the cron is installed. */
  interval(name: string, every: IntervalSpec, path: string, args: Record<string, unknown> = {}): this {
    return this.add(name, { kind: "interval", ms: intervalMs(name, every) }, path, args);
  }

  /** Runs `path` at the times of a cron expression ("m h dom mon dow", or with seconds first), in UTC or `options.timezone`. */
  cron(name: string, expression: string, path: string, args: Record<string, unknown> = {}, options: { readonly timezone?: string } = {}): this {
    if (typeof expression !== "string") throw invalid(name, "its schedule must be a cron expression string");
    const schedule: CronSchedule = { kind: "cron", expression, ...(options.timezone !== undefined ? { timezone: options.timezone } : {}) };
    try {
      cronOf(schedule).nextRun();
    } catch (error) {
      throw invalid(name, (error as Error).message);
    }
    return this.add(name, schedule, path, args);
  }

  get entries(): CronDeclaration[] {
    return [...this.declared.values()];
  }

  private add(name: string, schedule: CronSchedule, path: string, args: Record<string, unknown>): this {
    if (typeof name !== "string" || !CRON_NAME.test(name)) throw invalid(String(name), "its name must be 1–64 letters, digits or _ .:- (starting with a letter, digit or _)");
    if (this.declared.has(name)) throw invalid(name, "it is declared twice");
    if (typeof path !== "string" || !path.includes(":")) throw invalid(name, `it must name a function as "module:name", not ${JSON.stringify(path)}`);
    if (typeof args !== "object" || args === null || Array.isArray(args)) throw invalid(name, "its arguments must be an object");
    try {
      validateValue(args);
    } catch (error) {
      throw invalid(name, `its arguments are not a Cairn value: ${(error as Error).message}`);
    }
    this.declared.set(name, { name, path, args: args as ValueObject, schedule });
    return this;
  }
}

export function cronJobs(): CronJobs {
  return new CronJobs();
}

export function isCronJobs(value: unknown): value is CronJobs {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[CRONS_BRAND] === true;
}

function intervalMs(name: string, every: IntervalSpec): number {
  if (typeof every !== "object" || every === null) throw invalid(name, "its interval must be { seconds | minutes | hours }");
  const units = { seconds: 1_000, minutes: 60_000, hours: 3_600_000 } as const;
  const given = Object.entries(every).filter(([, amount]) => amount !== undefined);
  if (given.length !== 1 || !Object.hasOwn(units, given[0]![0])) throw invalid(name, "its interval must name exactly one of seconds, minutes, hours");
  const [unit, amount] = given[0]! as [keyof typeof units, unknown];
  const ms = typeof amount === "number" ? amount * units[unit] : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 1_000 || ms % 1_000 !== 0) throw invalid(name, `its interval must be a whole number of seconds, at least one, not ${String(amount)} ${unit}`);
  return ms;
}

function invalid(name: string, problem: string): CairnError {
  return new CairnError("SCHEMA_INVALID", `cron ${JSON.stringify(name)}: ${problem}`, { details: { cron: name } });
}
