/** Probes and metrics (spec 4.4). Unguarded, except /metrics when METRICS_TOKEN is set. */
import { Hono } from "hono";
import { bearerToken } from "../../auth/policy.js";
import { secretMatcher } from "../../auth/hashing.js";
import type { Metrics } from "../../observability/metrics.js";
import type { Settings } from "../../settings/parse.js";
import type { Store } from "../../store/ports.js";
import { notFound, unauthorized } from "../../problems.js";
import type { HttpEnv } from "../env.js";

const READY_TIMEOUT_MS = 2_000;

export function probeRoutes({ settings, store, metrics }: { settings: Settings; store: Store; metrics: Metrics }) {
  const metricsToken = settings.METRICS_TOKEN ? secretMatcher(settings.METRICS_TOKEN) : undefined;

  return new Hono<HttpEnv>()
    .get("/health", (c) => c.json({ status: "ok", runtime: settings.runtime, checkpointer: settings.CHECKPOINTER }))
    .get("/ready", async (c) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("timeout")), READY_TIMEOUT_MS)));
      try {
        await Promise.race([store.ping(), late]);
        return c.json({ status: "ready" });
      } catch {
        return c.json({ status: "not_ready" }, 503);
      } finally {
        clearTimeout(timer);
      }
    })
    .get("/metrics", async (c) => {
      if (!settings.METRICS_ENABLED) throw notFound();
      if (metricsToken) {
        const token = bearerToken(c.req.raw);
        if (token === undefined) throw unauthorized("Missing or invalid bearer token.", false);
        if (!metricsToken(token)) throw unauthorized("Missing or invalid bearer token.", true);
      }
      return c.body(metrics.render(), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" });
    });
}
