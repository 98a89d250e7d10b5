import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { Metrics } from "../../observability/metrics.js";
import { NOOP_SPAN, type Tracing } from "../../observability/tracing.js";
import type { HttpEnv } from "../env.js";

/**
 * Request metrics, the access log line and, while tracing is on, the server span (CONTRACT 7):
 * one middleware for the three, so the route is found once and a request pays for one frame.
 * Labels and span names are route templates (`POST /chat`; `unmatched` for 404s, whose span
 * keeps the method alone, as the HTTP conventions name it); the log keeps the path only, never
 * the query string. The span continues the caller's traceparent where PROPAGATE_TRACE_HEADERS
 * says (`tracing.extract`) and ends with the response, or with the last event of a streamed one.
 */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export function access({ metrics, tracing }: { metrics: Metrics; tracing: Tracing }): MiddlewareHandler<HttpEnv> {
  return async function accessMiddleware(c, next) {
    const started = performance.now();
    // Any method a client sends is client input: unknown ones share one label (`_OTHER` on spans).
    const known = KNOWN_METHODS.has(c.req.method);
    const span = tracing.enabled ? tracing.serverSpan(known ? c.req.method : "_OTHER", tracing.extract(c.req.raw.headers, c.req.path)) : NOOP_SPAN;
    if (span.recording) c.set("span", span);
    try {
      await next();
    } catch (error) {
      // Hono's onError answers errors of the routes; only one thrown around them gets here.
      span.fail(error instanceof Error ? error.name : "Error").end();
      throw error;
    }
    const route = routeLabel(c);
    const method = known ? c.req.method : "other";
    const status = c.res.status;
    if (span.recording) {
      if (route !== "unmatched") span.route(route);
      span.httpStatus(status);
    }
    // What the line needs, taken now: a streamed response ends long after, and holding the
    // request's context until then would keep it all in memory while the stream waits.
    const logger = c.get("logger");
    const path = c.req.path;
    const record = () => {
      span.end();
      const seconds = (performance.now() - started) / 1000;
      metrics.httpRequests.inc({ method, route, status: String(status) });
      metrics.httpDuration.observe(seconds, { method, route });
      logger.info("request", { method, path, route, status, duration_ms: Math.round(seconds * 1000) });
    };
    const streamDone = c.get("streamDone");
    if (streamDone) void streamDone.then(record, record);
    else record();
  };
}

/** Route paths as templates, once each (`/threads/:thread_id` -> `/threads/{thread_id}`). */
const templates = new Map<string, string>();

/** The matched route as a template (`/threads/{thread_id}`), or `unmatched`: never the path. */
export function routeLabel(c: Parameters<MiddlewareHandler<HttpEnv>>[0]): string {
  const routes = matchedRoutes(c);
  let last: (typeof routes)[number] | undefined;
  for (let i = routes.length - 1; i >= 0 && last === undefined; i--) if (routes[i]!.method !== "ALL") last = routes[i];
  if (!last) return "unmatched";
  let template = templates.get(last.path);
  if (template === undefined) templates.set(last.path, (template = last.path.replace(/:([A-Za-z_]+)/g, "{$1}")));
  return template;
}
