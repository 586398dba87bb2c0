import { z } from "zod";
import { CairnError, hasErrorCode, isCasConflict, type ErrorCode, randomHex, type Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * One small JSON object in the bucket updated only by compare-and-swap: the primitive
 * under manifests, globals and consumer watermarks.
 *
 * Invariants:
 * - Every write carries a strictly increasing `version` and a fresh random `nonce`, so no
 *   two writes are byte-identical (real stores use content hashes as etags) and a writer
 *   whose response was lost can recognise its own write by re-reading.
 * - A write whose outcome is unknown is resolved by one re-read: our nonce there means it
 *   landed; anything else means it lost (CAS_CONFLICT). Only when the re-read also fails
 *   does the caller see STORE_AMBIGUOUS_OUTCOME. (If ours landed and was overwritten
 *   since, CAS_CONFLICT is still the right answer for a CAS object: the caller re-reads
 *   and decides again on the state that superseded ours.)
 * - Nothing is written that the schema would refuse to read back: every value is
 *   validated before it is encoded (INVALID_ARGUMENT, nothing written), so a bad option or
 *   argument can never leave an object that no node can parse.
 */
export interface CasVersioned {
  readonly version: number;
  readonly nonce: string;
}

export type CasFields<T extends CasVersioned> = Omit<T, "version" | "nonce">;

export interface CasCodec<T extends CasVersioned> {
  /** Validates and encodes a value about to be written; INVALID_ARGUMENT if it is invalid. */
  encode(value: T, key: string): Uint8Array;
  /** Parses and validates a stored body; throws a Corruption-kind CairnError. */
  decode(body: Uint8Array, key: string): T;
}

export interface CasSnapshot<T> {
  readonly value: T;
  readonly etag: string;
}

const NONCE_BYTES = 12;

export class CasObject<T extends CasVersioned> {
  constructor(
    readonly store: ObjectStore,
    readonly key: string,
    private readonly codec: CasCodec<T>,
    private readonly random: Random,
  ) {}

  async read(): Promise<CasSnapshot<T> | null> {
    const result = await this.store.get(this.key);
    if (result === null) return null;
    if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
    return { value: this.codec.decode(result.body, this.key), etag: result.etag };
  }

  /** Conditional GET: returns `cached` itself when the object has not changed. */
  async refresh(cached: CasSnapshot<T>): Promise<CasSnapshot<T> | null> {
    const result = await this.store.get(this.key, { ifNoneMatch: cached.etag });
    if (result === null) return null;
    if (result === "not-modified") return cached;
    return { value: this.codec.decode(result.body, this.key), etag: result.etag };
  }

  /** Creates the object at version 1; CAS_CONFLICT if it exists. */
  async create(fields: CasFields<T>): Promise<CasSnapshot<T>> {
    const value = this.stamp(fields, 1);
    return this.write(value, (body) => this.store.create(this.key, body));
  }

  /** Replaces `current` with `fields` at the next version; CAS_CONFLICT if it changed. */
  async replace(current: CasSnapshot<T>, fields: CasFields<T>): Promise<CasSnapshot<T>> {
    const value = this.stamp(fields, current.value.version + 1);
    return this.write(value, (body) => this.store.casPut(this.key, body, current.etag));
  }

  /**
   * Read-modify-write until it sticks or `attemptsMax` conflicts happened. `mutate` sees
   * the current value (null if absent) and returns the new fields, or null to leave the
   * object as it is (then the current snapshot is returned).
   */
  async update(
    mutate: (current: T | null) => CasFields<T> | null,
    attemptsMax = 8,
  ): Promise<CasSnapshot<T> | null> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.read();
      const fields = mutate(current?.value ?? null);
      if (fields === null) return current;
      try {
        return current === null ? await this.create(fields) : await this.replace(current, fields);
      } catch (error) {
        if (!isCasConflict(error) || attempt >= attemptsMax) throw error;
      }
    }
  }

  private stamp(fields: CasFields<T>, version: number): T {
    return { ...fields, version, nonce: randomHex(this.random, NONCE_BYTES) } as unknown as T;
  }

  private async write(value: T, put: (body: Uint8Array) => Promise<{ etag: string }>): Promise<CasSnapshot<T>> {
    const body = this.codec.encode(value, this.key);
    try {
      const { etag } = await put(body);
      return { value, etag };
    } catch (error) {
      if (!hasErrorCode(error, "STORE_AMBIGUOUS_OUTCOME")) throw error;
      return this.resolveLostResponse(value, error);
    }
  }

  private async resolveLostResponse(value: T, original: unknown): Promise<CasSnapshot<T>> {
    let stored: CasSnapshot<T> | null;
    try {
      stored = await this.read();
    } catch {
      throw original;
    }
    if (stored !== null && stored.value.nonce === value.nonce) return stored;
    throw new CairnError("CAS_CONFLICT", `write to ${this.key} did not land: another write won`, {
      cause: original,
      details: { key: this.key, version: value.version },
    });
  }
}

/** JSON codec whose decode validates with a zod schema and reports `code` on failure. */
export function jsonCasCodec<T extends CasVersioned>(
  schema: z.ZodType<T, unknown>,
  code: ErrorCode,
  what: string,
): CasCodec<T> {
  return {
    encode: (value, key) => {
      const checked = schema.safeParse(value);
      if (!checked.success) {
        throw new CairnError("INVALID_ARGUMENT", `refusing to write an invalid ${what} at ${key}: ${z.prettifyError(checked.error)}`, {
          details: { key },
        });
      }
      return new TextEncoder().encode(JSON.stringify(value));
    },
    decode: (body, key) => {
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
      } catch (error) {
        throw new CairnError(code, `${what} at ${key} is not valid JSON`, { cause: error, details: { key } });
      }
      const parsed = schema.safeParse(json);
      if (!parsed.success) {
        throw new CairnError(code, `${what} at ${key} is invalid: ${z.prettifyError(parsed.error)}`, {
          details: { key },
        });
      }
      return parsed.data;
    },
  };
}
