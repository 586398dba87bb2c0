/**
 * Two pages: "Tasks" (a likes counter with an optimistic bump, the paginated task list)
 * and "Detail" (the task clicked on the first page, skipped while none is chosen, and a
 * query that fails, shown both through useQueryState and through an error boundary).
 * Every element a test reads has a data-testid.
 */
import { useState } from "react";
import type { Id } from "../../../src/functions/index.js";
import { useConnectionState } from "../../../src/react/index.js";
import { DetailPage } from "./DetailPage.js";
import { TasksPage } from "./TasksPage.js";

type PageName = "tasks" | "detail";

export function App() {
  const [page, setPage] = useState<PageName>("tasks");
  const [selected, setSelected] = useState<Id<"tasks"> | null>(null);
  const connection = useConnectionState();
  const tab = (name: PageName, label: string) => (
    <button data-testid={`tab-${name}`} aria-current={page === name ? "page" : undefined} onClick={() => setPage(name)}>
      {label}
    </button>
  );
  return (
    <>
      <header>
        <strong>Cairn + React</strong>
        <nav>
          {tab("tasks", "Tasks")} {tab("detail", "Detail")}
        </nav>
        <span data-testid="connection" data-state={connection.state}>
          {connection.state}
        </span>
      </header>
      {page === "tasks" ? (
        <TasksPage
          onOpen={(id) => {
            setSelected(id);
            setPage("detail");
          }}
        />
      ) : (
        <DetailPage selected={selected} />
      )}
    </>
  );
}
