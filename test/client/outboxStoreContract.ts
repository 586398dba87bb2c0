import type { OutboxStore } from "../../src/client/OutboxStore.js";

/**
 * The OutboxStore contract (src/client/OutboxStore.ts) as one suite every store runs:
 * the file store in Node and the IndexedDB store in Chromium (bundled with esbuild, so
 * this module imports nothing but the interface). It answers the broken promises, one
 * line each; an empty list means the store keeps the contract.
 *
 * `storeOf(name)` opens a new store instance over the outbox `name`; two instances of
 * one name are two clients (tabs, processes) of the same outbox.
 */
export async function outboxStoreContractBreaches(storeOf: (name: string) => OutboxStore): Promise<string[]> {
  const breaches: string[] = [];
  const expectEqual = (what: string, actual: unknown, expected: unknown) => {
    if (actual !== expected) breaches.push(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  };

  // A round trip: what a closed store saved is what the next one opens; null empties it.
  const first = storeOf("round-trip");
  expectEqual("a new outbox opens empty", await first.open(), null);
  await first.save("text A");
  await first.save("text B");
  await first.close();
  const second = storeOf("round-trip");
  expectEqual("the next client opens the last saved text", await second.open(), "text B");
  await second.save(null);
  await second.close();
  const third = storeOf("round-trip");
  expectEqual("an outbox saved as null opens empty", await third.open(), null);
  await third.close();

  // Exclusive: a second client never opens an outbox another holds.
  const holder = storeOf("exclusive");
  await holder.open();
  await holder.save("held text");
  const other = storeOf("exclusive");
  let opened: string | null = null;
  try {
    opened = await other.open();
    await other.save("other text");
  } catch (error) {
    expectEqual("a second client is refused with OUTBOX_LOCKED", (error as { code?: unknown }).code, "OUTBOX_LOCKED");
  }
  expectEqual("a second client does not see the held text", opened, null);
  await other.close();
  await holder.close();
  const next = storeOf("exclusive");
  const reopened = await next.open();
  if (reopened !== "held text" && reopened !== "other text") breaches.push(`after both closed, an outbox opens one of their texts, not ${JSON.stringify(reopened)}`);
  await next.close();

  // Quarantine keeps the text somewhere and empties the outbox.
  const damaged = storeOf("quarantine");
  await damaged.open();
  await damaged.save("unreadable text");
  const keptAt = await damaged.quarantine("unreadable text");
  if (typeof keptAt !== "string" || keptAt.length === 0) breaches.push(`quarantine names where it kept the text, not ${JSON.stringify(keptAt)}`);
  await damaged.close();
  const afterQuarantine = storeOf("quarantine");
  expectEqual("a quarantined outbox opens empty", await afterQuarantine.open(), null);
  await afterQuarantine.close();

  return breaches;
}
