/**
 * The page: a live list of tasks. `api` is typed from the app's functions (no code
 * generation): a wrong function name or argument fails to type-check.
 */
import { apiOf, CairnClient } from "cairn/client";
import type { functions } from "../cairn/app.js";

const api = apiOf<typeof functions>();
const client = new CairnClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/sync`);

const list = document.getElementById("tasks") as HTMLUListElement;
const form = document.getElementById("add") as HTMLFormElement;
const text = document.getElementById("text") as HTMLInputElement;
const error = document.getElementById("error") as HTMLParagraphElement;
const status = document.getElementById("status") as HTMLSpanElement;

client.onConnectionChange(({ state }) => (status.textContent = state === "connected" ? "" : "reconnecting…"));

client.subscribe(api.tasks.list, {}, (tasks) => {
  list.replaceChildren(
    ...tasks.map((task) => {
      const item = document.createElement("li");
      item.className = task.done ? "done" : "";
      const box = Object.assign(document.createElement("input"), { type: "checkbox", checked: task.done });
      box.addEventListener("change", () => void client.mutation(api.tasks.toggle, { id: task._id }).catch(show));
      const label = Object.assign(document.createElement("span"), { textContent: task.text });
      const remove = Object.assign(document.createElement("button"), { textContent: "✕", title: "Delete" });
      remove.addEventListener("click", () => void client.mutation(api.tasks.remove, { id: task._id }).catch(show));
      item.append(box, label, remove);
      return item;
    }),
  );
});

form.addEventListener("submit", (event) => {
  event.preventDefault();
  error.textContent = "";
  const value = text.value;
  text.value = "";
  client.mutation(api.tasks.add, { text: value }).catch(show);
});

function show(failure: unknown): void {
  error.textContent = failure instanceof Error ? failure.message : String(failure);
}
