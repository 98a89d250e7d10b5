import type { MiddlewareHandler } from "hono";
import type { Tracing } from "../../observability/tracing.js";
import type { HttpEnv } from "../env.js";
import { routeLabel } from "./access.js";

/**
 * The server span of each request (CONTRACT 7), installed right after the request id and only
 * while tracing is on, so a service without tracing pays nothing per request. It continues the
 * caller's traceparent where PROPAGATE_TRACE_HEADERS says (`tracing.extract`), is named by method
 * and route template once the route is known (`POST /chat`; never the path, whose ids are data;
 * a request no route matched keeps the method alone, as the HTTP conventions name it), and ends
 * with the response, or with the last event of a streamed one.
 */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export function traceRequests({ tracing }: { tracing: Tracing }): MiddlewareHandler<HttpEnv> {
  return async function traceMiddleware(c, next) {
    // Any method a client sends is client input: unknown ones are `_OTHER` (HTTP conventions).
    const method = KNOWN_METHODS.has(c.req.method) ? c.req.method : "_OTHER";
    const span = tracing.serverSpan(method, tracing.extract(c.req.raw.headers, c.req.path));
    c.set("span", span);
    try {
      await next();
    } catch (error) {
      // Hono's onError answers errors of the routes; only one thrown around them gets here.
      span.fail(error instanceof Error ? error.name : "Error").end();
      throw error;
    }
    const route = routeLabel(c);
    if (route !== "unmatched") span.route(route);
    span.httpStatus(c.res.status);
    const streamDone = c.get("streamDone");
    if (streamDone) void streamDone.then(() => span.end(), () => span.end());
    else span.end();
  };
}
