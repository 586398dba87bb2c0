import { answerOf } from "./adminApi.js";

/**
 * Where the admin key lives in the browser: the tab's sessionStorage only (gone when the
 * tab closes; never localStorage, never a URL, never a log line). `cairn dev` opens the
 * page with a one-time login code in the fragment (`#login=<code>`), which the page
 * trades for the key once and then removes from the address bar and the history entry.
 */
const STORAGE_NAME = "cairn-dashboard-admin-key";
const LOGIN_FRAGMENT = /^#login=([^&]+)$/;

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_NAME);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_NAME, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_NAME);
}

/** The login code in the URL's fragment, if any, removed from the URL at once (whether or not it is valid). */
export function takeLoginCode(): string | null {
  const match = LOGIN_FRAGMENT.exec(location.hash);
  if (match === null) return null;
  history.replaceState(null, "", `${location.pathname}${location.search}`);
  return decodeURIComponent(match[1]!);
}

/** Trades a one-time login code for the admin key (`POST /api/admin/login` answers `{key}` once). */
export async function keyForLoginCode(code: string): Promise<string> {
  const response = await fetch("/api/admin/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
    cache: "no-store",
  });
  const answer = await answerOf<{ key?: unknown }>(response);
  if (typeof answer.key !== "string" || answer.key === "") throw new Error("the login answer holds no key");
  return answer.key;
}
