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

/**
 * What /health says persists (spec 4.4): `checkpointer` is where threads and checkpoints live
 * (CHECKPOINTER standalone; `graph-server` when the server owns them), and under graph-server
 * `run_store` says where our run records, approvals and tasks live (`sql`: its database, or
 * `memory`), since that is no longer the same place.
 */
export interface HealthPersistence {
  readonly checkpointer: string;
  readonly run_store?: string;
}

export function probeRoutes({ settings, store, metrics, persistence }: { settings: Settings; store: Store; metrics: Metrics; persistence: HealthPersistence }) {
  const metricsToken = settings.METRICS_TOKEN ? secretMatcher(settings.METRICS_TOKEN) : undefined;
  const health = { status: "ok", runtime: settings.runtime, ...persistence };

  return new Hono<HttpEnv>()
    .get("/health", (c) => c.json(health))
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
