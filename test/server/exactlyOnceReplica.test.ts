/**
 * Scenario: real `cairn serve` processes over a directory bucket, a writer and a replica,
 * both verifying JWTs. Mutations sent to the replica are forwarded to the writer with
 * the caller's identity and its ackedThrough: another identity naming a user's
 * (clientId, seq) through the replica learns nothing and runs nothing
 * (RECEIPT_IDENTITY_MISMATCH), and a seq below the floor the user's ackedThrough set
 * through the replica is refused on both nodes (MUTATION_SEQ_BELOW_FLOOR), never applied
 * a second time.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ServeProcess } from "./serveProcess.js";

const ADMIN_KEY = "exactly-once-replica-admin-key";
const SECRET = "a-test-secret-that-is-long-enough-for-hs256";
const root = mkdtempSync(join(tmpdir(), "cairn-exactly-once-replica-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const processes: ServeProcess[] = [];
afterEach(async () => {
  for (const process of processes.splice(0)) await process.kill();
});

async function serve(local: string, extra: readonly string[] = []): Promise<ServeProcess> {
  const started = await ServeProcess.start(
    ["--store", join(root, "bucket"), "--local", join(root, local), "--app", "test/sync/syncApp.ts", "--port", "0", "--jwt-secret", SECRET, ...extra],
    { CAIRN_ADMIN_KEY: ADMIN_KEY },
  );
  processes.push(started);
  return started;
}

function tokenFor(subject: string): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(subject).setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
}

async function bump(url: string, subject: string, receipt: { clientId: string; seq: number; ackedThrough?: number }) {
  const response = await fetch(new URL("/api/mutation", url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${await tokenFor(subject)}` },
    body: JSON.stringify({ path: "counters:bump", args: { name: "forwarded" }, ...receipt }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("receipts through a replica", () => {
  it("binds forwarded receipts to the caller's identity and refuses seqs below the floor set through the replica", async () => {
    const writer = await serve("writer");
    const replica = await serve("replica", ["--replica"]);
    expect(await bump(replica.url, "ada", { clientId: "ada-phone", seq: 1 })).toMatchObject({ status: 200, body: { value: 1 } });
    expect(await bump(replica.url, "eve", { clientId: "ada-phone", seq: 1 })).toMatchObject({ status: 400, body: { error: { code: "RECEIPT_IDENTITY_MISMATCH" } } });
    expect(await bump(replica.url, "ada", { clientId: "ada-phone", seq: 1 })).toMatchObject({ status: 200, body: { value: 1, replayed: true } });
    expect(await bump(replica.url, "ada", { clientId: "ada-phone", seq: 2, ackedThrough: 1 })).toMatchObject({ status: 200, body: { value: 2 } });
    for (const node of [replica, writer]) {
      expect(await bump(node.url, "ada", { clientId: "ada-phone", seq: 1 })).toMatchObject({
        status: 400,
        body: { error: { code: "MUTATION_SEQ_BELOW_FLOOR", details: { floorSeq: 2 } } },
      });
    }
    const counter = await fetch(new URL("/api/query", writer.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path: "counters:get", args: { name: "forwarded" } }),
    });
    expect(((await counter.json()) as { value: number }).value).toBe(2);
  });
});
