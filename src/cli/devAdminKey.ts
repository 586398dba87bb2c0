import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CairnError, randomHex, type Random } from "../base/index.js";

const ADMIN_KEY_FILE = "admin-key";

/**
 * `cairn dev`'s admin key when CAIRN_ADMIN_KEY is not set: a random key kept beside the
 * local files (readable by this user only), the same on every restart, so that a
 * dashboard logged in stays logged in and the key can be read from the file to log in
 * again. It is never printed: the dashboard link carries a one-time code instead.
 */
export function devAdminKey(localDirectory: string, random: Random): { readonly key: string; readonly path: string } {
  const path = join(localDirectory, ADMIN_KEY_FILE);
  try {
    const key = readFileSync(path, "utf8").trim();
    if (key.length < 16) throw new CairnError("INVALID_ARGUMENT", `${path} holds no admin key; delete it to get a new one`);
    return { key, path };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const key = randomHex(random, 24);
  mkdirSync(localDirectory, { recursive: true });
  writeFileSync(path, `${key}\n`, { flag: "wx", mode: 0o600 });
  chmodSync(path, 0o600);
  return { key, path };
}
