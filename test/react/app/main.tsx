/**
 * The React test app's entry: a client of the sync URL given as `?sync=ws://…/api/sync`
 * (the test serves this page from another port than Cairn's), under a CairnProvider.
 */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { CairnClient } from "../../../src/client/index.js";
import { CairnProvider } from "../../../src/react/index.js";
import { App } from "./App.js";

const syncUrl = new URLSearchParams(location.search).get("sync");
if (syncUrl === null) throw new Error("open this page with ?sync=ws://host:port/api/sync");
const client = new CairnClient(syncUrl, { reconnectBackoffBaseMs: 50, reconnectBackoffMaxMs: 500 });

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <CairnProvider client={client}>
      <App />
    </CairnProvider>
  </StrictMode>,
);
