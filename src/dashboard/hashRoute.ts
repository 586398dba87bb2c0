import { useEffect, useState } from "preact/hooks";

/**
 * The page's location, in the URL's fragment: `#/data`, `#/data/<table>`,
 * `#/data/<table>/<id>`, `#/functions`, `#/functions/<path>`, `#/logs`, `#/deployment`.
 * Parts are URI-encoded (a function path holds a colon, ids are opaque).
 */
export const VIEWS = ["data", "functions", "logs", "deployment"] as const;
export type ViewName = (typeof VIEWS)[number];

export interface Route {
  readonly view: ViewName;
  readonly parts: readonly string[];
}

export function parseRoute(hash: string): Route {
  const [first, ...rest] = hash.replace(/^#\/?/, "").split("/");
  const view = (VIEWS as readonly string[]).includes(first ?? "") ? (first as ViewName) : "data";
  return { view, parts: rest.filter((part) => part !== "").map(safeDecode) };
}

export function routeHref(view: ViewName, ...parts: string[]): string {
  return `#/${[view, ...parts.map(encodeURIComponent)].join("/")}`;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function useHashRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
