/** The page's entry: one client for the page, given to every hook through CairnProvider. */
import { createRoot } from "react-dom/client";
import { CairnClient } from "cairn/client";
import { CairnProvider } from "cairn/react";
import { App } from "./App.js";

const client = new CairnClient(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/sync`);

createRoot(document.getElementById("root")!).render(
  <CairnProvider client={client}>
    <App />
  </CairnProvider>,
);
