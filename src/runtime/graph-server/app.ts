/**
 * The server's custom HTTP app (`http.app` in langgraph.json): the same createApp routes, each
 * mounted by its exact method and path so the native API is left to the server, and its
 * middleware (ours: request ids, access lines, errors) never runs on native routes. Each request
 * also hands the server's storage operations to our thread store (server-threads.ts).
 */
import type { Ops } from "@langchain/langgraph-api/storage";
import { Hono } from "hono";
import { currentHost } from "./host.js";
import { OWN_ROUTES } from "./routes.js";

type ServerEnv = { Variables: { LANGGRAPH_OPS?: Ops } };

export const app = new Hono<ServerEnv>();
for (const [method, path] of OWN_ROUTES)
  app.on(method, path, async (c) => {
    const host = await currentHost();
    host.threads.bind(c.get("LANGGRAPH_OPS"));
    return host.fetch(c.req.raw);
  });

export default app;
