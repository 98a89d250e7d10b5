import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { Metrics } from "../../observability/metrics.js";
import type { HttpEnv } from "../env.js";

/**
 * Request metrics and the access log line. Labels are route templates (`unmatched` for 404s);
 * the log keeps the path only, never the query string.
 */
export function access({ metrics }: { metrics: Metrics }): MiddlewareHandler<HttpEnv> {
  return async function accessMiddleware(c, next) {
    const started = performance.now();
    await next();
    const route = routeLabel(c);
    const method = c.req.method;
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

function routeLabel(c: Parameters<MiddlewareHandler<HttpEnv>>[0]): string {
  const routes = matchedRoutes(c).filter((r) => r.method !== "ALL");
  const last = routes.at(-1);
  if (!last) return "unmatched";
  return last.path.replace(/:([A-Za-z_]+)/g, "{$1}");
}
