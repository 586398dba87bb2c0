/**
 * The path of a request's target, or null when the target does not parse as a URL path
 * (e.g. `//[`): the caller answers 400. `new URL` throws on such client bytes, so this is
 * the one place a request target is parsed.
 */
export function pathOf(target: string | undefined): string | null {
  try {
    return new URL(target ?? "/", "http://localhost").pathname;
  } catch {
    return null;
  }
}
