/**
 * Scenario: an app's HTTP actions router (`httpRouter()`, `http.route({...})`), on its own
 * and as App.fromModule reads it, without any server. A request's method and path find
 * one route: an exact path before any prefix, the longest prefix whatever the order the
 * routes were declared in, HEAD the GET route; a path routed for other methods only is a
 * "method" match listing exactly those (the server's 405), an unrouted path "none" (404).
 * Every malformed declaration (method, handler, path, prefix, a duplicate) is refused
 * when declared with SCHEMA_INVALID and leaves the router as it was, so a mistake shows
 * at load instead of as a request that silently finds the wrong handler. An app's `http`
 * export must be such a router; anything else is refused at load naming httpRouter().
 */
import { describe, expect, it } from "vitest";
import { CairnError } from "../../src/base/index.js";
import { App } from "../../src/functions/App.js";
import {
  defineSchema,
  defineTable,
  httpAction,
  httpRouter,
  v,
  type HttpActionHandler,
  type HttpRouteMatch,
  type HttpRouter,
  type HttpRouteSpec,
} from "../../src/functions/index.js";

/** A handler that says which route it is, so a match can be checked by calling it. */
function named(name: string): HttpActionHandler {
  return () => new Response(name);
}

function action(name: string) {
  return httpAction(named(name));
}

/** The name of the handler a lookup found, or the match itself when it found none. */
async function found(router: HttpRouter, method: string, path: string): Promise<string | HttpRouteMatch> {
  const match = router.lookup(method, path);
  if (match.kind !== "route") return match;
  const response = await match.handler(undefined as never, new Request("http://node.test/"));
  return response.text();
}

/** `fn` throws a CairnError SCHEMA_INVALID; returns its message. */
function refused(fn: () => unknown): string {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(CairnError);
  expect((thrown as CairnError).code).toBe("SCHEMA_INVALID");
  return (thrown as CairnError).message;
}

/** A router with a few routes, to check that a refused declaration adds nothing. */
function populated(): HttpRouter {
  const router = httpRouter();
  router.route({ path: "/hooks/stripe", method: "POST", handler: action("stripe") });
  router.route({ pathPrefix: "/files/", method: "GET", handler: action("files") });
  return router;
}

/** `spec` is refused with SCHEMA_INVALID and the router's routes are unchanged. */
function refusedRoute(spec: unknown, router: HttpRouter = populated()): string {
  const before = router.routes();
  const message = refused(() => router.route(spec as HttpRouteSpec));
  expect(router.routes()).toEqual(before);
  return message;
}

describe("matching a request to a route", () => {
  it("an exact path wins over any prefix, even the longest", async () => {
    const router = httpRouter();
    router.route({ pathPrefix: "/", method: "GET", handler: action("root*") });
    router.route({ pathPrefix: "/a/", method: "GET", handler: action("a*") });
    router.route({ pathPrefix: "/a/b/", method: "GET", handler: action("ab*") });
    router.route({ path: "/a/b/c", method: "GET", handler: action("abc") });
    expect(await found(router, "GET", "/a/b/c")).toBe("abc");
    expect(await found(router, "GET", "/a/b/cd")).toBe("ab*");
    expect(router.lookup("GET", "/a/b/c")).toMatchObject({ kind: "route", route: "GET /a/b/c" });
  });

  for (const order of ["shorter first", "longer first"] as const) {
    it(`the longest matching prefix wins, declared ${order}`, async () => {
      const router = httpRouter();
      const declare = {
        short: () => router.route({ pathPrefix: "/a/", method: "GET", handler: action("a*") }),
        long: () => router.route({ pathPrefix: "/a/b/", method: "GET", handler: action("ab*") }),
      };
      if (order === "shorter first") {
        declare.short();
        declare.long();
      } else {
        declare.long();
        declare.short();
      }
      expect(await found(router, "GET", "/a/b/x")).toBe("ab*");
      expect(await found(router, "GET", "/a/b/x/y")).toBe("ab*");
      expect(await found(router, "GET", "/a/x")).toBe("a*");
      expect(await found(router, "GET", "/a/bx")).toBe("a*");
      expect(router.lookup("GET", "/a/b/x")).toMatchObject({ kind: "route", route: "GET /a/b/*" });
      expect(router.lookup("GET", "/a/x")).toMatchObject({ kind: "route", route: "GET /a/*" });
    });
  }

  it('the prefix "/" catches every path nothing else matches', async () => {
    const router = httpRouter();
    router.route({ pathPrefix: "/", method: "GET", handler: action("root*") });
    router.route({ path: "/health", method: "GET", handler: action("health") });
    router.route({ pathPrefix: "/files/", method: "GET", handler: action("files*") });
    expect(await found(router, "GET", "/")).toBe("root*");
    expect(await found(router, "GET", "/anything")).toBe("root*");
    expect(await found(router, "GET", "/deep/er/path")).toBe("root*");
    expect(await found(router, "GET", "/healthz")).toBe("root*");
    expect(await found(router, "GET", "/files")).toBe("root*");
    expect(await found(router, "GET", "/health")).toBe("health");
    expect(await found(router, "GET", "/files/x")).toBe("files*");
    expect(router.lookup("GET", "/anything")).toMatchObject({ kind: "route", route: "GET /*" });
  });

  it("a path no route matches finds none", () => {
    const router = httpRouter();
    expect(router.lookup("GET", "/")).toEqual({ kind: "none" });
    router.route({ path: "/a", method: "GET", handler: action("a") });
    router.route({ pathPrefix: "/p/", method: "GET", handler: action("p*") });
    expect(router.lookup("GET", "/b")).toEqual({ kind: "none" });
    expect(router.lookup("GET", "/a/x")).toEqual({ kind: "none" });
    expect(router.lookup("GET", "/")).toEqual({ kind: "none" });
    expect(router.lookup("POST", "/nowhere")).toEqual({ kind: "none" });
  });

  it('the prefix "/files/" matches neither "/files" nor "/filesX"', () => {
    const router = httpRouter();
    router.route({ pathPrefix: "/files/", method: "GET", handler: action("files*") });
    expect(router.lookup("GET", "/files")).toEqual({ kind: "none" });
    expect(router.lookup("GET", "/filesX")).toEqual({ kind: "none" });
    expect(router.lookup("GET", "/filesX/y")).toEqual({ kind: "none" });
    expect(router.lookup("GET", "/files/")).toMatchObject({ kind: "route", route: "GET /files/*" });
    expect(router.lookup("GET", "/files/a/b")).toMatchObject({ kind: "route", route: "GET /files/*" });
  });

  it("a path routed for other methods only is a method match listing exactly those methods", () => {
    const router = httpRouter();
    router.route({ path: "/items", method: "POST", handler: action("post") });
    router.route({ path: "/items", method: "DELETE", handler: action("delete") });
    router.route({ pathPrefix: "/files/", method: "PUT", handler: action("put*") });
    const items = router.lookup("GET", "/items");
    expect(items.kind).toBe("method");
    expect([...(items as { allowed: readonly string[] }).allowed].sort()).toEqual(["DELETE", "POST"]);
    expect(router.lookup("PATCH", "/files/a")).toEqual({ kind: "method", allowed: ["PUT"] });
    // A method that is no route's at all, or not an HTTP method Cairn routes, is answered the same way.
    expect(router.lookup("TRACE", "/files/a")).toEqual({ kind: "method", allowed: ["PUT"] });
    expect(router.lookup("post", "/items")).toMatchObject({ kind: "method" });
    expect(router.lookup("POST", "/items")).toMatchObject({ kind: "route", route: "POST /items" });
  });

  it("HEAD finds the GET route, and with no GET route is a method match", async () => {
    const router = httpRouter();
    router.route({ path: "/page", method: "GET", handler: action("page") });
    router.route({ path: "/page", method: "POST", handler: action("page-post") });
    router.route({ pathPrefix: "/assets/", method: "GET", handler: action("assets*") });
    router.route({ path: "/hook", method: "POST", handler: action("hook") });
    expect(await found(router, "HEAD", "/page")).toBe("page");
    expect(router.lookup("HEAD", "/page")).toMatchObject({ kind: "route", route: "GET /page" });
    expect(await found(router, "HEAD", "/assets/logo.svg")).toBe("assets*");
    expect(router.lookup("HEAD", "/assets/logo.svg")).toMatchObject({ kind: "route", route: "GET /assets/*" });
    expect(router.lookup("HEAD", "/hook")).toEqual({ kind: "method", allowed: ["POST"] });
    expect(router.lookup("HEAD", "/nowhere")).toEqual({ kind: "none" });
  });

  it('a match names its route as "METHOD path" or "METHOD prefix*"', () => {
    const router = httpRouter();
    router.route({ path: "/hooks/stripe", method: "POST", handler: action("stripe") });
    router.route({ pathPrefix: "/files/", method: "DELETE", handler: action("files*") });
    expect(router.lookup("POST", "/hooks/stripe")).toMatchObject({ kind: "route", route: "POST /hooks/stripe" });
    expect(router.lookup("DELETE", "/files/a/b.txt")).toMatchObject({ kind: "route", route: "DELETE /files/*" });
  });
});

describe("refused declarations", () => {
  const handler = action("h");

  it("both path and pathPrefix, or neither", () => {
    expect(refusedRoute({ path: "/a", pathPrefix: "/a/", method: "GET", handler })).toMatch(/exactly one of path and pathPrefix/);
    expect(refusedRoute({ method: "GET", handler })).toMatch(/exactly one of path and pathPrefix/);
  });

  it("a method that is not one of HTTP_METHODS (HEAD included: it runs GET's)", () => {
    for (const method of ["get", "TRACE", "HEAD", "CONNECT", "", undefined, 1]) {
      expect(refusedRoute({ path: "/x", method, handler })).toMatch(/method must be one of GET, POST, PUT, PATCH, DELETE, OPTIONS/);
    }
  });

  it("a handler not made with httpAction(...)", () => {
    for (const bad of [named("bare"), { handler: named("look-alike") }, null, undefined, "handler"]) {
      expect(refusedRoute({ path: "/x", method: "GET", handler: bad })).toMatch(/httpAction/);
    }
  });

  it("httpAction of something other than a function", () => {
    for (const bad of [undefined, null, "handler", { handler: named("x") }]) {
      expect(refused(() => httpAction(bad as unknown as HttpActionHandler))).toMatch(/httpAction\(\.\.\.\) takes a handler/);
    }
  });

  it("a second route for the same method and path, or method and prefix; another method is fine", async () => {
    const router = httpRouter();
    router.route({ path: "/a", method: "GET", handler: action("a-get") });
    router.route({ pathPrefix: "/p/", method: "GET", handler: action("p-get") });
    expect(refusedRoute({ path: "/a", method: "GET", handler: action("a-get-2") }, router)).toMatch(/two routes for GET \/a/);
    expect(refusedRoute({ pathPrefix: "/p/", method: "GET", handler: action("p-get-2") }, router)).toMatch(/two routes for GET \/p\/\*/);
    // The first declarations still answer.
    expect(await found(router, "GET", "/a")).toBe("a-get");
    expect(await found(router, "GET", "/p/x")).toBe("p-get");
    // The same path or prefix for another method is a route of its own; an exact path and a prefix do not clash.
    router.route({ path: "/a", method: "POST", handler: action("a-post") });
    router.route({ pathPrefix: "/p/", method: "POST", handler: action("p-post") });
    router.route({ pathPrefix: "/a/", method: "GET", handler: action("a*-get") });
    router.route({ path: "/p", method: "GET", handler: action("p-exact") });
    expect(await found(router, "POST", "/a")).toBe("a-post");
    expect(await found(router, "POST", "/p/x")).toBe("p-post");
    expect(await found(router, "GET", "/a/x")).toBe("a*-get");
    expect(await found(router, "GET", "/p")).toBe("p-exact");
  });

  it("a malformed path (the root itself is a path: the base path's own route)", () => {
    const router = httpRouter();
    router.route({ path: "/", method: "GET", handler: action("root") });
    expect(router.lookup("GET", "/")).toMatchObject({ kind: "route", route: "GET /" });
    const malformed = ["x", "", "a/b", "/a//b", "//a", "/a/./b", "/a/../b", "/.", "/..", "/a/", "/a?b", "/a#b", "/a b", " /a", "/a\tb", "/a\nb"];
    for (const path of malformed) {
      expect(refusedRoute({ path, method: "GET", handler }), JSON.stringify(path)).toMatch(/path must be an absolute path/);
    }
    for (const path of [1, null, true, ["/a"], { path: "/a" }]) {
      expect(refusedRoute({ path, method: "GET", handler }), JSON.stringify(path)).toMatch(/path must be an absolute path/);
    }
  });

  it('a malformed pathPrefix, or one without a trailing "/"', () => {
    for (const pathPrefix of ["/a", "/files", "", "a"]) {
      expect(refusedRoute({ pathPrefix, method: "GET", handler }), pathPrefix).toMatch(/pathPrefix must be a path ending with "\/"/);
    }
    for (const pathPrefix of [5, null, ["/a/"], { prefix: "/a/" }]) {
      expect(refusedRoute({ pathPrefix, method: "GET", handler }), JSON.stringify(pathPrefix)).toMatch(/pathPrefix must be a path ending with "\/"/);
    }
    for (const pathPrefix of ["x/", "//", "/a//", "/a//b/", "/./", "/a/../", "/a?b/", "/a#b/", "/a b/"]) {
      expect(refusedRoute({ pathPrefix, method: "GET", handler }), pathPrefix).toMatch(/pathPrefix must be an absolute path/);
    }
  });

  it("a spec that is not an object", () => {
    for (const spec of [undefined, null, "/a", 1, true]) {
      expect(refusedRoute(spec)).toMatch(/route\(\.\.\.\) takes \{ path \| pathPrefix, method, handler \}/);
    }
  });

  it("the well-formed paths next to those refused are accepted", async () => {
    const router = httpRouter();
    for (const path of ["/a", "/a/b", "/a.b", "/.well-known/x", "/a..b", "/~user", "/a%20b", "/v1:call", "/a-b_c"]) {
      router.route({ path, method: "GET", handler: action(path) });
      expect(await found(router, "GET", path)).toBe(path);
    }
  });
});

describe("listing routes", () => {
  it('routes() lists "METHOD /path" and "METHOD /prefix/*", sorted', () => {
    const router = httpRouter();
    expect(router.routes()).toEqual([]);
    router.route({ path: "/zeta", method: "GET", handler: action("1") });
    router.route({ pathPrefix: "/files/", method: "PUT", handler: action("2") });
    router.route({ path: "/alpha", method: "POST", handler: action("3") });
    router.route({ pathPrefix: "/", method: "GET", handler: action("4") });
    router.route({ path: "/alpha", method: "DELETE", handler: action("5") });
    router.route({ pathPrefix: "/files/", method: "GET", handler: action("6") });
    router.route({ path: "/files", method: "GET", handler: action("7") });
    expect(router.routes()).toEqual(["DELETE /alpha", "GET /*", "GET /files", "GET /files/*", "GET /zeta", "POST /alpha", "PUT /files/*"]);
  });
});

describe("an app's http export", () => {
  const schema = defineSchema({ messages: defineTable({ body: v.string() }) });

  it("a router is the app's http", () => {
    const http = httpRouter();
    http.route({ path: "/hook", method: "POST", handler: action("hook") });
    const app = App.fromModule({ schema, functions: {}, http }, "app.ts");
    expect(app.http).toBe(http);
  });

  it("without one, the app's http is null", () => {
    expect(App.fromModule({ schema, functions: {} }, "app.ts").http).toBeNull();
  });

  it("anything else is refused naming httpRouter()", () => {
    const impostors: unknown[] = [{}, { route: () => undefined }, { route: () => undefined, lookup: () => ({ kind: "none" }), routes: () => [] }, null, "router"];
    for (const http of impostors) {
      let thrown: unknown;
      try {
        App.fromModule({ schema, functions: {}, http }, "app.ts");
      } catch (error) {
        thrown = error;
      }
      expect(thrown, String(http)).toBeInstanceOf(CairnError);
      expect(thrown).toMatchObject({ code: "SCHEMA_INVALID", details: { source: "app.ts" } });
      expect((thrown as Error).message).toMatch(/`http` must be a router made with httpRouter\(\)/);
    }
  });
});
