import { Command, InvalidArgumentError, Option } from "commander";

/**
 * Every benchmark's flags, parsed the same way (commander): `--name value` after
 * `npm run bench:x --`, `--help` listing each flag with its default, and a bad value,
 * an unknown flag or a stray argument refused with a message before anything starts
 * (commander prints it and exits 1). A benchmark declares its flags as an object whose
 * keys are its options' names; a flag's name is its key in kebab case (`warmupSeconds`
 * → `--warmup-seconds`) unless it says otherwise, and the parsed values come back under
 * the same keys, typed.
 */
export interface Flag<T> {
  /** What `--help` says it sets (its default is added). */
  readonly help: string;
  readonly default: T;
  /** Reads the flag's text, or throws InvalidArgumentError saying what it expected; null for a switch (no value: on when given). */
  readonly parse: ((text: string) => T) | null;
  /** The placeholder `--help` shows for its value ("n", "list"). */
  readonly valueName: string;
  /** Its name after `--` when that is not its key in kebab case. */
  readonly name?: string;
  /** How `--help` shows the default, when not as the value itself ("the engine's default"). */
  readonly defaultText?: string;
}

/** What an optional flag means when not given, for `--help` ("none" unless said). */
interface Absent {
  readonly absent?: string;
}

type FlagSpec = Readonly<Record<string, Flag<unknown>>>;

/** The parsed flags of a spec, under the spec's keys (their doc comments carry over). */
export type FlagValues<S extends FlagSpec> = { readonly [K in keyof S]: S[K] extends Flag<infer T> ? T : never };

export interface BenchFlags<S extends FlagSpec> {
  /** "bench:commit": how `--help` and errors name the command. */
  readonly name: string;
  readonly description: string;
  readonly flags: S;
  /** Per switch: the values it gives the flags not given explicitly (bench:replica's `--quick`). */
  readonly presets?: { readonly [K in keyof S]?: Partial<FlagValues<S>> };
  /** Rules between flags: what the first broken one says, or null when all hold. */
  readonly check?: (values: FlagValues<S>) => string | null;
}

export function parseFlags<S extends FlagSpec>(argv: readonly string[], bench: BenchFlags<S>): FlagValues<S> {
  const program = new Command().name(bench.name).description(bench.description).allowExcessArguments(false);
  const attributes = new Map<string, string>();
  for (const [key, spec] of Object.entries(bench.flags)) {
    const option = optionOf(key, spec);
    program.addOption(option);
    attributes.set(key, option.attributeName());
  }
  program.parse([...argv], { from: "user" });
  const given = (key: string) => program.getOptionValueSource(attributes.get(key)!) === "cli";
  const values: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(bench.flags)) values[key] = given(key) ? program.getOptionValue(attributes.get(key)!) : spec.default;
  for (const [switchKey, preset] of Object.entries(bench.presets ?? {})) {
    if (values[switchKey] !== true) continue;
    for (const [key, value] of Object.entries(preset as Record<string, unknown>)) if (!given(key)) values[key] = value;
  }
  const parsed = values as FlagValues<S>;
  const broken = bench.check?.(parsed) ?? null;
  if (broken !== null) program.error(`error: ${broken}`);
  return parsed;
}

function optionOf(key: string, spec: Flag<unknown>): Option {
  const name = spec.name ?? key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
  if (spec.parse === null) return new Option(`--${name}`, spec.help);
  const parse = spec.parse;
  return new Option(`--${name} <${spec.valueName}>`, `${spec.help} (default ${spec.defaultText ?? defaultText(spec.default)})`).argParser((text: string) => parse(text));
}

function defaultText(value: unknown): string {
  return Array.isArray(value) ? (value.length === 0 ? "none" : value.join(",")) : String(value);
}

/** The kinds of flag the benchmarks take. */
export const flag = {
  /** A whole number, at least `min`. */
  wholeNumber(help: string, defaultValue: number, min = 1): Flag<number> {
    return { help, default: defaultValue, parse: (text) => wholeNumberOf(text, min), valueName: "n" };
  },

  /** A whole number, at least `min` (1 unless said), or none (null) when not given. */
  optionalWholeNumber(help: string, options: Absent & { readonly min?: number } = {}): Flag<number | null> {
    return { help, default: null, parse: (text) => wholeNumberOf(text, options.min ?? 1), valueName: "n", defaultText: options.absent ?? "none" };
  },

  /** Comma-separated whole numbers, each at least `min`; with `sorted`, ascending and each once. */
  wholeNumbers(help: string, defaultValue: readonly number[], options: { readonly min?: number; readonly sorted?: boolean } = {}): Flag<readonly number[]> {
    const min = options.min ?? 1;
    return {
      help,
      default: defaultValue,
      parse: (text) => {
        const numbers = text.split(",").map((item) => wholeNumberOf(item.trim(), min));
        return options.sorted === true ? [...new Set(numbers)].sort((a, b) => a - b) : numbers;
      },
      valueName: "list",
    };
  },

  /** Seconds: a number above 0 (or 0 itself with `zeroAllowed`), fractions allowed. */
  seconds(help: string, defaultValue: number, options: { readonly zeroAllowed?: boolean } = {}): Flag<number> {
    const zeroAllowed = options.zeroAllowed === true;
    return {
      help,
      default: defaultValue,
      parse: (text) => {
        const value = Number(text);
        if (text.trim() === "" || !Number.isFinite(value) || value < 0 || (value === 0 && !zeroAllowed)) {
          throw new InvalidArgumentError(zeroAllowed ? "expected a number ≥ 0" : "expected a number > 0");
        }
        return value;
      },
      valueName: "s",
    };
  },

  /** Which of `all` phases run (`--phases 1,3`), in `all`'s order, each once; all of them by default. */
  phases<P extends number>(all: readonly P[]): Flag<readonly P[]> {
    return {
      help: "phases to run",
      default: all,
      parse: (text) => {
        const asked = text.split(",").map((item) => Number(item.trim()));
        if (!asked.every((phase) => (all as readonly number[]).includes(phase))) throw new InvalidArgumentError(`expected a comma-separated list of some of ${all.join(",")}`);
        return all.filter((phase) => asked.includes(phase));
      },
      valueName: "list",
    };
  },

  /** One of `choices`. */
  choice<C extends string>(help: string, choices: readonly C[], defaultValue: C): Flag<C> {
    return {
      help: `${help}: ${choices.join(" | ")}`,
      default: defaultValue,
      parse: (text) => {
        if (!(choices as readonly string[]).includes(text)) throw new InvalidArgumentError(`expected one of ${choices.join(", ")}`);
        return text as C;
      },
      valueName: "name",
    };
  },

  /** A piece of text (a directory), or none (null) when not given; `name` when the flag is not the key in kebab case. */
  optionalText(help: string, valueName: string, options: Absent & { readonly name?: string } = {}): Flag<string | null> {
    return { help, default: null, parse: (text) => text, valueName, defaultText: options.absent ?? "none", ...(options.name !== undefined ? { name: options.name } : {}) };
  },

  /** Comma-separated pieces of text, or none (null) when not given. */
  optionalTexts(help: string, options: Absent = {}): Flag<readonly string[] | null> {
    return { help, default: null, parse: (text) => text.split(",").map((item) => item.trim()), valueName: "list", defaultText: options.absent ?? "none" };
  },

  /** A switch: no value, on when given. */
  switch(help: string): Flag<boolean> {
    return { help, default: false, parse: null, valueName: "" };
  },
};

function wholeNumberOf(text: string, min: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) throw new InvalidArgumentError(`expected a whole number ≥ ${min}`);
  return value;
}
