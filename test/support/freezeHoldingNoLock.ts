import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * SIGSTOPs `child` at a moment it holds none of a directory bucket's lock files. A
 * compare-and-swap on the directory store holds its key's lock while it runs, and a
 * process frozen holding one blocks every other writer of that key (a survivor's takeover
 * of the manifest included) until it resumes (docs/operations.md, Failover): a freeze that
 * lands there tests the directory store's locks, not a node frozen past its lease. So
 * freeze, look for a lock of the child's process, and if there is one thaw it and try
 * again a moment later. `bucketDirectory` null: a bucket that holds no locks.
 */
export async function freezeHoldingNoLock(child: ChildProcess, bucketDirectory: string | null): Promise<void> {
  const pid = child.pid!;
  const locks = bucketDirectory === null ? null : join(bucketDirectory, ".locks");
  for (let attempt = 1; ; attempt++) {
    child.kill("SIGSTOP");
    // Stopped for sure (state T) before its locks are judged: it takes none from then on.
    for (let wait = 0; wait < 100 && !isStopped(pid); wait++) await new Promise((resolve) => setTimeout(resolve, 2));
    if (locks === null || !holdsLock(locks, pid) || attempt >= 50) return;
    child.kill("SIGCONT");
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  }
}

function holdsLock(locks: string, pid: number): boolean {
  let names: string[];
  try {
    names = readdirSync(locks);
  } catch {
    return false;
  }
  for (const name of names) {
    try {
      if ((JSON.parse(readFileSync(join(locks, name), "utf8")) as { pid?: number }).pid === pid) return true;
    } catch {
      // Gone meanwhile, or torn: not a lock this process holds now.
    }
  }
  return false;
}

function isStopped(pid: number): boolean {
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; the comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "T";
  } catch {
    return true;
  }
}
