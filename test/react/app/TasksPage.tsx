import type { Id } from "../../../src/functions/index.js";
import { useEffect } from "react";
import { useMutation, usePaginatedQuery, useQuery } from "../../../src/react/index.js";
import { api } from "./api.js";

const PAGE_ITEMS = 5;

export function TasksPage({ onOpen }: { readonly onOpen: (id: Id<"tasks">) => void }) {
  return (
    <>
      <Likes />
      <Tasks onOpen={onOpen} />
    </>
  );
}

/** The counter, bumped optimistically: the new count shows before the server commits it, and goes back if the bump fails. */
function Likes() {
  const likes = useQuery(api.likes.get, { name: "page" });
  const bump = useMutation(api.likes.bump).withOptimisticUpdate((store, { name }) => {
    const current = store.getQuery(api.likes.get, { name });
    if (current !== undefined) store.setQuery(api.likes.get, { name }, current + 1);
  });
  return (
    <section>
      Likes: <span data-testid="likes">{likes ?? "…"}</span>{" "}
      <button data-testid="like" onClick={() => void bump({ name: "page", hold: true })}>
        Like
      </button>{" "}
      <button data-testid="like-refused" onClick={() => void bump({ name: "page", hold: true, fail: true }).catch(() => undefined)}>
        Like (refused)
      </button>
    </section>
  );
}

function Tasks({ onOpen }: { readonly onOpen: (id: Id<"tasks">) => void }) {
  const { results, status, loadMore } = usePaginatedQuery(api.tasks.page, {}, { initialNumItems: PAGE_ITEMS });
  // Every list the page showed, for the test to check that none ever held a row twice, out of order or with a hole.
  useEffect(() => {
    (window as { shownRanks?: number[][] }).shownRanks?.push(results.map((task) => task.rank));
  }, [results]);
  return (
    <section>
      <ol>
        {results.map((task) => (
          <li key={task._id} data-testid="task" data-rank={task.rank}>
            <a href="#" onClick={() => onOpen(task._id)}>
              {task.title}
            </a>
          </li>
        ))}
      </ol>
      <span data-testid="page-status">{status}</span>{" "}
      <button data-testid="load-more" disabled={status !== "CanLoadMore"} onClick={() => loadMore(PAGE_ITEMS)}>
        Load more
      </button>
    </section>
  );
}
