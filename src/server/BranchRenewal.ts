import { hasErrorCode, repeatEvery, type Clock, type Random } from "../base/index.js";
import { globalsObject } from "../manifest/index.js";
import { openObjectStore, type ObjectStore } from "../objectstore/index.js";
import { renewBranch } from "../shard/index.js";

/**
 * A node serving a branch keeps its registration in the parent alive (DESIGN.md §10a), as a
 * replica keeps its consumer watermark: every quarter of the registration's ttl (at least
 * a minute, at most an hour) its expiry moves to now + ttl. A branch nobody serves expires
 * one ttl after its last renewal, and its parent may then collect what it read.
 *
 * A failed renewal is logged and retried at the next tick; an expired registration is
 * logged as an error once: the branch may no longer be able to read below its fork.
 */
export const BRANCH_RENEW_EVERY_MS_MIN = 60_000;
export const BRANCH_RENEW_EVERY_MS_MAX = 60 * 60 * 1000;

export interface BranchRenewalOptions {
  readonly store: ObjectStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: (line: string) => void;
  /** Opens the parent's root by URL (default: openObjectStore, with this process's credentials). */
  readonly openStore?: (url: string) => Promise<ObjectStore>;
}

export class BranchRenewal {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private expiredLogged = false;
  private failing = false;

  private constructor(
    private readonly options: BranchRenewalOptions,
    private readonly branchId: string,
  ) {}

  /** Starts renewing if the deployment is a branch; null otherwise. Renews once before it returns. */
  static async start(options: BranchRenewalOptions): Promise<BranchRenewal | null> {
    const globals = (await globalsObject(options.store, options.random).read())?.value ?? null;
    // A branch resharded (or restored in place) since holds its own copy: its parent's objects are no longer read.
    if (globals?.branch == null || globals.generation !== 0) return null;
    const renewal = new BranchRenewal(options, globals.branch.id);
    const ttlMs = await renewal.renew();
    const everyMs = Math.min(BRANCH_RENEW_EVERY_MS_MAX, Math.max(BRANCH_RENEW_EVERY_MS_MIN, Math.floor((ttlMs ?? BRANCH_RENEW_EVERY_MS_MIN * 4) / 4)));
    renewal.loop = repeatEvery(options.clock, everyMs, renewal.stopping.signal, async () => void (await renewal.renew()));
    return renewal;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** One renewal; the registration's ttl, or null when it failed. */
  private async renew(): Promise<number | null> {
    try {
      const renewed = await renewBranch({
        store: this.options.store,
        openStore: this.options.openStore ?? ((url) => openObjectStore(url)),
        clock: this.options.clock,
        random: this.options.random,
      });
      if (this.failing) this.options.log(`branch "${this.branchId}": its registration in the parent is renewed again, until ${new Date(renewed.expiresAt).toISOString()}`);
      this.failing = false;
      return renewed.ttlMs;
    } catch (error) {
      const expired = hasErrorCode(error, "BRANCH_PARENT_EXPIRED") || hasErrorCode(error, "BRANCH_NOT_FOUND");
      if (expired && this.expiredLogged) return null;
      this.expiredLogged ||= expired;
      if (!expired && this.failing) return null;
      this.failing = true;
      this.options.log(
        `${expired ? "error" : "warning"}: branch "${this.branchId}": ${error instanceof Error ? error.message : String(error)}` +
          (expired ? "" : " (renewing again at the next tick)"),
      );
      return null;
    }
  }
}
