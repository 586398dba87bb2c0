import { Component, type ReactNode } from "react";
import type { Id } from "../../../src/functions/index.js";
import { useQuery, useQueryState } from "../../../src/react/index.js";
import { api } from "./api.js";

export function DetailPage({ selected }: { readonly selected: Id<"tasks"> | null }) {
  // Skipped until a task is chosen on the other page.
  const task = useQueryState(api.tasks.get, selected === null ? "skip" : { id: selected });
  const broken = useQueryState(api.tasks.broken);
  return (
    <>
      <section>
        <span data-testid="detail-status">{task.status}</span>
        {task.status === "success" && <h2 data-testid="detail-title">{task.value?.title ?? "(deleted)"}</h2>}
      </section>
      <section>
        <p data-testid="broken-state" className="error">
          {broken.status === "error" ? `${broken.error.code}: ${broken.error.message}` : broken.status}
        </p>
        <ErrorBoundary>
          <BrokenThroughUseQuery />
        </ErrorBoundary>
      </section>
    </>
  );
}

/** useQuery throws a failed query's error during render. */
function BrokenThroughUseQuery() {
  const value = useQuery(api.tasks.broken);
  return <p>{value === undefined ? "loading…" : "unexpected value"}</p>;
}

class ErrorBoundary extends Component<{ children: ReactNode }, { error: Error | null }> {
  override state = { error: null as Error | null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  override render() {
    if (this.state.error !== null) return <p data-testid="boundary" className="error">caught: {this.state.error.message}</p>;
    return this.props.children;
  }
}
