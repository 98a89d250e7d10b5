/** The Hono app: middleware in order (request id, server span, access, errors), then the route groups. */
import { Hono } from "hono";
import type { A2AService } from "../a2a/service.js";
import type { PrincipalHasher } from "../auth/hashing.js";
import type { AuthPolicy } from "../auth/policy.js";
import type { Ids } from "../ids.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import type { Runs } from "../runs/index.js";
import type { Settings } from "../settings/parse.js";
import type { Store } from "../store/ports.js";
import type { HttpEnv } from "./env.js";
import { access } from "./middleware/access.js";
import { authGuard } from "./middleware/auth.js";
import { cors } from "./middleware/cors.js";
import { errorHandler, notFoundHandler } from "./middleware/errors.js";
import { requestId } from "./middleware/request-id.js";
import { a2aRoutes } from "./routes/a2a.js";
import { approvalRoutes } from "./routes/approvals.js";
import { chatRoutes } from "./routes/chat.js";
import { devRoutes } from "./routes/dev.js";
import { type HealthPersistence, probeRoutes } from "./routes/probes.js";
import { threadRoutes } from "./routes/threads.js";

export interface RouterParts {
  readonly settings: Settings;
  readonly auth: AuthPolicy;
  readonly hashPrincipal: PrincipalHasher;
  readonly store: Store;
  readonly runs: Runs;
  readonly a2a: A2AService;
  readonly ids: Ids;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Server spans are made only while it is enabled. */
  readonly tracing: Tracing;
  /** The A2A card says whether answers are structured. */
  readonly structured: boolean;
  /** The runtime's HOST/PORT do not say where it is reached: the A2A card names the request's origin. */
  readonly cardFollowsRequest: boolean;
  /** A development API key to prefill in the playground (only set by `npm run dev`). */
  readonly playgroundKey: string | undefined;
  /** Where state persists, as /health reports it. */
  readonly persistence: HealthPersistence;
}

export function buildRouter(parts: RouterParts): Hono<HttpEnv> {
  const { settings, store, runs, ids, metrics } = parts;
  const requireAuth = authGuard(parts);
  const app = new Hono<HttpEnv>();
  app.use("*", requestId(parts));
  app.use("*", access(parts));
  app.use("*", cors({ allowed: settings.CORS_ALLOWED_ORIGINS }));
  app.onError(errorHandler({ ids, dev: settings.dev }));
  app.notFound(notFoundHandler);
  app.route("/", probeRoutes({ settings, store, metrics, persistence: parts.persistence }));
  app.route("/", chatRoutes({ settings, ids, runs, requireAuth }));
  app.route("/", threadRoutes({ store, runs, requireAuth, runtime: settings.runtime }));
  app.route("/", approvalRoutes({ store, runs, settings, requireAuth }));
  app.route("/", a2aRoutes({ settings, service: parts.a2a, card: { structured: parts.structured, auth: parts.auth.name, followsRequest: parts.cardFollowsRequest }, requireAuth }));
  if (settings.dev) app.route("/", devRoutes({ settings, playgroundKey: parts.playgroundKey }));
  return app;
}
