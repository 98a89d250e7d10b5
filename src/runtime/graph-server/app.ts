/**
 * The server's custom HTTP app (`http.app` in langgraph.json): the same createApp routes, each
 * mounted by its exact method and path so the native API is left to the server, and our app's
 * middleware (access lines, errors) never runs on native routes; native responses only get their
 * X-Request-ID here. Each request also hands the server's storage operations to our thread store
 * (server-threads.ts).
 */
import type { Ops } from "@langchain/langgraph-api/storage";
import { Hono } from "hono";
import { chooseRequestId } from "../../http/middleware/request-id.js";
import { currentHost } from "./host.js";
import { OWN_ROUTES } from "./routes.js";

type ServerEnv = { Variables: { LANGGRAPH_OPS?: Ops } };

export const app = new Hono<ServerEnv>();
// The server mounts this app ahead of its native API, so this runs for native requests too
// (after the server's auth handler, which sets the id on its refusals itself: auth.ts). Every
// response carries X-Request-ID (spec 4); our own routes' responses have it already.
app.use("*", async (c, next) => {
  const sent = c.req.header("x-request-id");
  await next();
  if (c.res.headers.has("x-request-id")) return;
  const id = chooseRequestId(sent, (await currentHost()).parts.ids);
  try {
    c.res.headers.set("X-Request-ID", id);
  } catch {
    // A response whose headers cannot change (one fetched elsewhere): the same response, headers copied.
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set("X-Request-ID", id);
  }
});
for (const [method, path] of OWN_ROUTES)
  app.on(method, path, async (c) => {
    const host = await currentHost();
    host.threads.bind(c.get("LANGGRAPH_OPS"));
    return host.fetch(c.req.raw);
  });

export default app;
