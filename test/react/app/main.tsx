/**
 * The React test app's entry: a client of the sync URL given as `?sync=ws://…/api/sync`
 * (the test serves this page from another port than Cairn's), under a CairnProvider.
 * It counts the live subscriptions of the paginated task query for the test.
 */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { CairnClient } from "../../../src/client/index.js";
import { CairnProvider } from "../../../src/react/index.js";
import { api } from "./api.js";
import { App } from "./App.js";

const syncUrl = new URLSearchParams(location.search).get("sync");
if (syncUrl === null) throw new Error("open this page with ?sync=ws://host:port/api/sync");
const client = new CairnClient(syncUrl, { reconnectBackoffBaseMs: 50, reconnectBackoffMaxMs: 500 });
countLivePageSubscriptions(client);

/**
 * Keeps `window.livePageSubscriptions` at the number of live subscriptions of the paginated
 * task query (one per loaded page), for the test to see a page split in two.
 */
function countLivePageSubscriptions(client: CairnClient): void {
  const counter = window as { livePageSubscriptions?: number };
  counter.livePageSubscriptions = 0;
  const subscribe = client.subscribe.bind(client);
  client.subscribe = ((ref, args, onUpdate, onError) => {
    const stop = subscribe(ref, args, onUpdate, onError);
    if (ref.path !== api.tasks.page.path) return stop;
    counter.livePageSubscriptions! += 1;
    let live = true;
    return () => {
      if (live) counter.livePageSubscriptions! -= 1;
      live = false;
      stop();
    };
  }) as CairnClient["subscribe"];
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <CairnProvider client={client}>
      <App />
    </CairnProvider>
  </StrictMode>,
);
