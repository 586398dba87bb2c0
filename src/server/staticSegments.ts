/**
 * The decoded path segments a request path names inside the static directory, or null
 * when it must not reach a file there. The URL parser (pathOf) has already resolved raw
 * and percent-encoded dot segments (`/../`, `/%2e%2e/`) and turned `\` into `/`; this is
 * the check that does not rely on it. Refused:
 * - a segment that decodes to `.` or `..`, or holds `/`, `\`, NUL or another control
 *   character once decoded (`%2f`, `%5c`, `%00`): it would name another path than it shows;
 * - a segment that does not decode (a malformed `%` escape);
 * - a hidden name (starting with `.`) other than `.well-known`, so that `.env`, `.git/` or
 *   an editor's swap file left in a build directory is not served by accident.
 * Empty segments (`a//b`, a trailing `/`) are dropped. Symlinks are StaticFiles' check.
 */
export function staticSegments(path: string): string[] | null {
  const segments: string[] = [];
  for (const raw of path.split("/")) {
    if (raw === "") continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment === "." || segment === ".." || /[/\\\x00-\x1f\x7f]/.test(segment)) return null;
    if (segment.startsWith(".") && segment !== ".well-known") return null;
    segments.push(segment);
  }
  return segments;
}
