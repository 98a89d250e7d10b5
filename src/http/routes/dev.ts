/** Dev pages (spec 4, 5.1): mounted only under APP_ENV=dev, so they answer 404 everywhere else. */
import { Hono } from "hono";
import type { Settings } from "../../settings/parse.js";
import type { HttpEnv } from "../env.js";
import { openApiDocument } from "../openapi.js";
import { DOCS_CSP, docsHtml } from "../pages/docs.js";
import { PLAYGROUND_CSP, playgroundHtml } from "../pages/playground.js";

export function devRoutes({ settings, playgroundKey }: { settings: Settings; playgroundKey: string | undefined }) {
  const doc = openApiDocument(settings);
  const playground = playgroundHtml({ apiKey: playgroundKey, a2aName: settings.A2A_NAME });
  const docs = docsHtml();
  return new Hono<HttpEnv>()
    .get("/playground", (c) => c.html(playground, 200, { "Content-Security-Policy": PLAYGROUND_CSP }))
    .get("/docs", (c) => c.html(docs, 200, { "Content-Security-Policy": DOCS_CSP }))
    .get("/openapi.json", (c) => c.json(doc));
}
