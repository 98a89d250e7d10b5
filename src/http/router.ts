/** The Hono app: middleware in order (request id, access, errors), then the route groups. */
import { Hono } from "hono";
import type { Deps } from "../deps.js";
import type { HttpEnv } from "./env.js";
import { access } from "./middleware/access.js";
import { cors } from "./middleware/cors.js";
import { errorHandler, notFoundHandler } from "./middleware/errors.js";
import { requestId } from "./middleware/request-id.js";
import type { A2AService } from "../a2a/service.js";
import { a2aRoutes } from "./routes/a2a.js";
import { approvalRoutes } from "./routes/approvals.js";
import { chatRoutes } from "./routes/chat.js";
import { devRoutes } from "./routes/dev.js";
import { probeRoutes } from "./routes/probes.js";
import { threadRoutes } from "./routes/threads.js";

export function buildRouter(deps: Deps, a2a: A2AService): Hono<HttpEnv> {
  const app = new Hono<HttpEnv>();
  app.use("*", requestId(deps));
  app.use("*", access(deps));
  app.use("*", cors({ allowed: deps.settings.CORS_ALLOWED_ORIGINS }));
  app.onError(errorHandler({ ids: deps.ids, dev: deps.settings.dev }));
  app.notFound(notFoundHandler);
  app.route("/", probeRoutes(deps));
  app.route("/", chatRoutes(deps));
  app.route("/", threadRoutes(deps));
  app.route("/", approvalRoutes(deps));
  app.route("/", a2aRoutes(deps, a2a));
  if (deps.settings.dev) app.route("/", devRoutes(deps));
  return app;
}
