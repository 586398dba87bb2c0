import { systemClock, systemRandom } from "../base/index.js";
import { readBranchRegistry } from "../manifest/index.js";
import { openObjectStore, storeUrlWithin } from "../objectstore/index.js";
import { createBranch, deleteBranch, readBranchRegistration, renewBranch, BRANCH_TTL_MS_DEFAULT } from "../shard/index.js";
import { formatDuration, formatTs } from "./pointInTime.js";
import { throttled } from "./progressReporter.js";

/**
 * `cairn branch`: a deployment that starts as another's state at one moment and writes its
 * own log from there, sharing the parent's objects below the fork instead of copying them
 * (shard/createBranch). `list` shows a deployment's branches, `renew` extends how long the
 * parent holds a branch's history, `delete` removes a branch (its own objects only).
 */
const say = (line: string) => process.stdout.write(`${line}\n`);

export interface BranchCreateOptions {
  readonly store: string;
  readonly to: string;
  readonly at?: number;
  readonly ttl?: number;
  readonly name?: string;
}

export async function branchCreateCommand(options: BranchCreateOptions): Promise<void> {
  // Both roots by URLs another process can open: the branch's link names its parent's.
  const parentUrl = storeUrlWithin(options.store, "");
  const targetUrl = storeUrlWithin(options.to, "");
  const parent = await openObjectStore(parentUrl);
  try {
    const target = await openObjectStore(targetUrl);
    try {
      const progress = throttled((line) => process.stderr.write(`${line}\n`));
      const report = await createBranch({
        parent,
        parentUrl,
        target,
        targetUrl,
        ...(options.at === undefined ? {} : { atTs: options.at }),
        ttlMs: options.ttl ?? BRANCH_TTL_MS_DEFAULT,
        ...(options.name === undefined ? {} : { branchId: options.name }),
        openStore: (url) => openObjectStore(url),
        onProgress: (step) => {
          if (step.phase === "fork") progress(`shard ${step.shard + 1}/${step.shards}: fork point found (${step.segmentsRead} segment(s) read)`);
          if (step.phase === "written") progress(`shard ${step.shard + 1}/${step.shards}: written`);
        },
      });
      say(`branched deployment ${report.parentDeploymentId} at ${formatTs(report.forkTs)} into ${options.to}: new deployment ${report.deploymentId}, branch "${report.branchId}"`);
      for (const shard of report.shards) {
        const base = shard.snapshotSeqno === null ? "the log from its start" : `the parent's snapshot at seqno ${shard.snapshotSeqno}`;
        const run = shard.logThrough >= shard.logFrom ? `, segments ${shard.logFrom}–${shard.logThrough}` : "";
        const cut = shard.cutSeqno === null ? "" : `, and segment ${shard.cutSeqno} cut at the fork (its one copied object)`;
        say(`  shard ${shard.shard}: shares ${base}${run}${cut}`);
      }
      say(`the parent keeps what the branch reads until ${new Date(report.expiresAt).toISOString()} (cairn branch renew --store ${options.to} extends it)`);
      say(`serve it with: cairn serve --store ${options.to}`);
    } finally {
      await target.close();
    }
  } finally {
    await parent.close();
  }
}

export async function branchListCommand(options: { readonly store: string }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const scan = await readBranchRegistry(store, systemRandom);
    const nowMs = systemClock.nowMs();
    if (scan.registrations.length === 0) say("no branches registered");
    for (const { value: branch } of scan.registrations) {
      const state = nowMs < branch.expiresAt ? `held until ${new Date(branch.expiresAt).toISOString()}` : `EXPIRED at ${new Date(branch.expiresAt).toISOString()} (holds nothing)`;
      say(`${branch.branchId}: ${branch.url}, forked at ${formatTs(branch.forkTs)}, ${state}, ttl ${formatDuration(branch.ttlMs)}`);
    }
    for (const bad of scan.malformed) process.stderr.write(`cairn: warning: ${bad.key} is no branch registration (${bad.reason}); it holds nothing\n`);
  } finally {
    await store.close();
  }
}

export async function branchRenewCommand(options: { readonly store: string; readonly ttl?: number }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const renewed = await renewBranch({ store, openStore: (url) => openObjectStore(url), ...(options.ttl === undefined ? {} : { ttlMs: options.ttl }) });
    say(`branch "${renewed.branchId}": its parent keeps what it reads until ${new Date(renewed.expiresAt).toISOString()} (ttl ${formatDuration(renewed.ttlMs)})`);
  } finally {
    await store.close();
  }
}

export async function branchDeleteCommand(options: { readonly store: string }): Promise<void> {
  const store = await openObjectStore(options.store);
  try {
    const before = await readBranchRegistration({ store, openStore: (url) => openObjectStore(url) }).catch(() => null);
    const report = await deleteBranch({ store, openStore: (url) => openObjectStore(url) });
    say(`deleted branch "${report.branchId}"${before === null ? "" : ` (deployment ${before.globals.deploymentId})`}: ${report.objectsDeleted} object(s) of its own; nothing of its parent`);
  } finally {
    await store.close();
  }
}
