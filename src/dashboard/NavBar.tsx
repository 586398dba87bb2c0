import { routeHref, VIEWS, type ViewName } from "./hashRoute.js";

const LABELS: Readonly<Record<ViewName, string>> = { data: "Data", functions: "Functions", logs: "Logs", deployment: "Deployment" };

/** The left nav (a row of tabs on a phone). */
export function NavBar({ current }: { readonly current: ViewName }) {
  return (
    <nav class="nav">
      {VIEWS.map((view) => (
        <a key={view} href={routeHref(view)} aria-current={view === current ? "page" : undefined} data-testid={`nav-${view}`}>
          {LABELS[view]}
        </a>
      ))}
    </nav>
  );
}
