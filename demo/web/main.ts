/**
 * The demo's page: a chat with channels, presence and a like counter, built on Cairn's
 * client library. Messages and likes are mutations (a like shows at once through an
 * optimistic update); the message list and the count are live queries; presence is
 * ephemeral — `publish` on a topic, never stored.
 *
 * Mutations go through an IndexedDB outbox: a message sent while offline shows greyed
 * ("sending…") until it commits, survives a reload of the page, and is applied once.
 */
import { apiOf, CairnClient, indexedDbOutbox, type PendingMutationView } from "cairn/client";
import type { functions } from "../app.js";

const api = apiOf<typeof functions>();
const CHANNELS = ["general", "random"] as const;
const PRESENCE_EVERY_MS = 4_000;
const PRESENCE_FORGET_MS = 10_000;

const client = new CairnClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/sync`, {
  outbox: indexedDbOutbox("cairn-demo-outbox"),
  onError: (error) => {
    console.warn("cairn client:", error);
    showError(error);
  },
});
const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = element<HTMLDivElement>("status");
const messages = element<HTMLUListElement>("messages");
const presence = element<HTMLUListElement>("presence");
const nameInput = element<HTMLInputElement>("name");
const bodyInput = element<HTMLInputElement>("body");
const errorLine = element<HTMLParagraphElement>("error");
const likeCount = document.querySelector<HTMLSpanElement>('[data-testid="like-count"]')!;

nameInput.value = localStorage.getItem("cairn-demo-name") ?? `guest-${Math.floor(Math.random() * 9000 + 1000)}`;
const me = () => nameInput.value.trim() || "guest";
let announcedName = me();
nameInput.addEventListener("change", () => {
  localStorage.setItem("cairn-demo-name", me());
  // Others drop the old name at once instead of waiting for it to time out.
  seen.delete(announcedName);
  announce();
  renderPresence();
});

client.onConnectionChange(({ state }) => {
  status.dataset["state"] = state;
  status.textContent = state === "connected" ? "live" : state === "closed" ? "closed" : "reconnecting…";
});

let stopChannel: () => void = () => undefined;
let channel: string = CHANNELS[0];
const seen = new Map<string, number>();
type Message = { readonly _id: string; readonly author: string; readonly body: string };
/** The channel's messages as the server last sent them; pending ones are drawn after them. */
let committedMessages: readonly Message[] = [];
client.onPendingMutationsChange(() => renderMessages(committedMessages));

function openChannel(next: string): void {
  stopChannel();
  channel = next;
  element("channel-title").textContent = `#${next}`;
  for (const button of document.querySelectorAll<HTMLButtonElement>("#channels button")) button.setAttribute("aria-current", String(button.dataset["channel"] === next));
  committedMessages = [];
  renderMessages(committedMessages);
  seen.clear();
  renderPresence();
  const offMessages = client.subscribe(api.messages.list, { channel: next, limit: 100 }, renderMessages, showError);
  const offLikes = client.subscribe(api.counters.get, { name: `likes:${next}` }, (value) => (likeCount.textContent = String(value)), showError);
  const offPresence = client.onBroadcast(`presence:${next}`, (event) => {
    const { name, replaces } = event as { name: string; replaces: string | null };
    if (replaces !== null && replaces !== name) seen.delete(replaces);
    seen.set(name, Date.now());
    renderPresence();
  });
  announce();
  stopChannel = () => (offMessages(), offLikes(), offPresence());
}

function renderMessages(list: readonly Message[]): void {
  committedMessages = list;
  const stickToBottom = messages.scrollTop + messages.clientHeight >= messages.scrollHeight - 8;
  messages.replaceChildren(...list.map((message) => messageItem(message.author, message.body, "message")), ...pendingMessages().map(pendingItem));
  if (stickToBottom) messages.scrollTop = messages.scrollHeight;
}

/** Messages of this channel sent but not shown by the server yet (this page's, or restored from the outbox after a reload). */
function pendingMessages(): { readonly author: string; readonly body: string }[] {
  const isMessage = (mutation: PendingMutationView) => mutation.path === api.messages.send.path;
  return client
    .pendingMutations()
    .filter(isMessage)
    .map((mutation) => mutation.args as { channel: string; author: string; body: string })
    .filter((message) => message.channel === channel);
}

function pendingItem(message: { readonly author: string; readonly body: string }): HTMLLIElement {
  const item = messageItem(message.author, message.body, "pending-message");
  item.classList.add("pending");
  const note = document.createElement("small");
  note.textContent = "sending…";
  item.append(note);
  return item;
}

function messageItem(authorName: string, body: string, testId: string): HTMLLIElement {
  const item = document.createElement("li");
  item.dataset["testid"] = testId;
  if (authorName === me()) item.classList.add("mine");
  const author = document.createElement("b");
  author.textContent = authorName;
  item.append(author, document.createTextNode(body));
  return item;
}

function renderPresence(): void {
  const now = Date.now();
  seen.set(me(), now);
  for (const [name, at] of seen) if (now - at > PRESENCE_FORGET_MS) seen.delete(name);
  presence.replaceChildren(
    ...[...seen.keys()].sort().map((name) => {
      const item = document.createElement("li");
      item.textContent = name === me() ? `${name} (you)` : name;
      return item;
    }),
  );
}

function announce(): void {
  client.publish(`presence:${channel}`, { name: me(), replaces: announcedName });
  announcedName = me();
}

function showError(error: unknown): void {
  errorLine.textContent = error instanceof Error ? error.message : String(error);
}

const like = client.mutation(api.counters.increment).withOptimisticUpdate((store, { name }) => {
  const current = store.getQuery(api.counters.get, { name });
  if (current !== undefined) store.setQuery(api.counters.get, { name }, current + 1);
});

element("likes").addEventListener("click", () => {
  like({ name: `likes:${channel}` }).catch(showError);
});

element<HTMLFormElement>("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = bodyInput.value;
  if (body.trim() === "") return;
  bodyInput.value = "";
  errorLine.textContent = "";
  client.mutation(api.messages.send, { channel, author: me(), body }).catch((error: unknown) => {
    bodyInput.value = body;
    showError(error);
  });
});

element("channels").append(
  ...CHANNELS.map((name) => {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset["channel"] = name;
    button.textContent = `#${name}`;
    button.addEventListener("click", () => openChannel(name));
    return button;
  }),
);

openChannel(channel);
setInterval(() => {
  announce();
  renderPresence();
}, PRESENCE_EVERY_MS);
