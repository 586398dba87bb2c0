/**
 * A live task list. `api` is typed from the app's functions (no code generation): a
 * wrong function name or argument fails to type-check. useQuery re-renders on every
 * change anyone makes; a toggle shows at once (an optimistic update) and is undone if the
 * server refuses it.
 */
import { useState, type FormEvent } from "react";
import { apiOf } from "cairn/client";
import { useConnectionState, useMutation, useQuery } from "cairn/react";
import type { functions } from "../cairn/app.js";

const api = apiOf<typeof functions>();

export function App() {
  const tasks = useQuery(api.tasks.list, {});
  const connection = useConnectionState();
  const add = useMutation(api.tasks.add);
  const remove = useMutation(api.tasks.remove);
  const toggle = useMutation(api.tasks.toggle).withOptimisticUpdate((store, { id }) => {
    const current = store.getQuery(api.tasks.list, {});
    if (current !== undefined) store.setQuery(api.tasks.list, {}, current.map((task) => (task._id === id ? { ...task, done: !task.done } : task)));
  });
  const [text, setText] = useState("");
  const [error, setError] = useState("");
  const show = (failure: unknown) => setError(failure instanceof Error ? failure.message : String(failure));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setError("");
    setText("");
    add({ text }).catch(show);
  };

  return (
    <>
      <h1>
        Tasks <span id="status">{connection.state === "connected" ? "" : "connecting…"}</span>
      </h1>
      <form id="add" onSubmit={submit}>
        <input id="text" type="text" placeholder="What needs doing?" autoComplete="off" value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit">Add</button>
      </form>
      <p id="error" role="alert">
        {error}
      </p>
      <ul id="tasks">
        {tasks?.map((task) => (
          <li key={task._id} className={task.done ? "done" : ""}>
            <input type="checkbox" checked={task.done} onChange={() => toggle({ id: task._id }).catch(show)} />
            <span>{task.text}</span>
            <button title="Delete" onClick={() => remove({ id: task._id }).catch(show)}>
              ✕
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}
