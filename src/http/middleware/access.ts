import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { Metrics } from "../../observability/metrics.js";
import type { HttpEnv } from "../env.js";

/**
 * Request metrics and the access log line. Labels are route templates (`unmatched` for 404s);
 * the log keeps the path only, never the query string.
 */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export function access({ metrics }: { metrics: Metrics }): MiddlewareHandler<HttpEnv> {
  return async function accessMiddleware(c, next) {
    const started = performance.now();
    await next();
    const route = routeLabel(c);
    // Any method a client sends is client input: unknown ones share one label.
    const method = KNOWN_METHODS.has(c.req.method) ? c.req.method : "other";
    const status = c.res.status;
    const record = () => {
      const seconds = (performance.now() - started) / 1000;
      metrics.httpRequests.inc({ method, route, status: String(status) });
      metrics.httpDuration.observe(seconds, { method, route });
      c.get("logger").info("request", { method, path: c.req.path, route, status, duration_ms: Math.round(seconds * 1000) });
    };
    const streamDone = c.get("streamDone");
    if (streamDone) void streamDone.then(record, record);
    else record();
  };
}

/** The matched route as a template (`/threads/{thread_id}`), or `unmatched`: never the path. */
export function routeLabel(c: Parameters<MiddlewareHandler<HttpEnv>>[0]): string {
  const routes = matchedRoutes(c).filter((r) => r.method !== "ALL");
  const last = routes.at(-1);
  if (!last) return "unmatched";
  return last.path.replace(/:([A-Za-z_]+)/g, "{$1}");
}
