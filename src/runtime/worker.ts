/**
 * The workerd module worker: one app per isolate, built from the bindings (read as the
 * environment) on the first request. State lives in isolate memory (memory store and lease),
 * which suits a single-isolate deployment and tests; replicas need durable storage.
 */
import { createApp, type App } from "../app.js";

let app: Promise<App> | undefined;

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Promise<Response> {
    if (!app) {
      const vars: Record<string, string> = {};
      for (const [k, v] of Object.entries(env)) if (typeof v === "string") vars[k] = v;
      app = createApp({ env: vars });
    }
    return (await app).fetch(request, env, ctx);
  },
};
