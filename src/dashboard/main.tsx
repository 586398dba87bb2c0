/**
 * The dashboard's entry: the page served at /_dashboard by every Cairn node. It holds no
 * deployment data of its own; it asks the admin API (with the admin key the person
 * gives) and the public client library for everything it shows.
 */
import { render } from "preact";
import { App } from "./App.js";

render(<App />, document.getElementById("dashboard")!);
