/**
 * The dashboard (DESIGN.md §1): the web page every node serves at /_dashboard. It is a
 * browser app, not a library: no layer imports it. Its entry is main.tsx, bundled with
 * the client library (`cairn/client`) by src/server/DashboardAssets.ts — prebuilt into
 * dist/dashboard/ for the package, built in memory in a checkout.
 */
export {};
