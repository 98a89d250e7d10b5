/**
 * The built graph-server app (dist/graph-server/app.js, what langgraph.json names) is mounted by
 * the LangGraph server with `app.route`, on the server's own hono. The build bundles hono into the
 * service's chunks but leaves the graph-server's import of it to node_modules (tsup.config.ts), so
 * the two share one copy: only then does `route` take our handlers as they are, and an error in
 * our middleware reaches the server's error handler, as the server's own routes' errors do.
 */
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";

const HOST_SLOT = Symbol.for("agent-service.graph-server.host");
const slot = globalThis as { [HOST_SLOT]?: Promise<unknown> };
afterEach(() => {
  delete slot[HOST_SLOT];
});

describe("the graph-server app on the LangGraph server's hono", () => {
  it("an error in its middleware is answered by the server's error handler", async () => {
    // A path in a variable: the built file has no types, and `npm test` builds it first.
    const built = new URL("../../dist/graph-server/app.js", import.meta.url).href;
    const { app } = (await import(built)) as { app: Hono };
    // The app's host (createApp from the environment) failing as it is composed: the middleware's first await throws.
    const failed = Promise.reject(new Error("host failed"));
    failed.catch(() => {});
    slot[HOST_SLOT] = failed;
    const server = new Hono();
    server.onError((error, c) => c.json({ answeredBy: "server", message: error.message }, 500));
    server.route("/", app);
    const res = await server.request("/threads");
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ answeredBy: "server", message: "host failed" });
  });
});
