/**
 * The workerd module worker: one app per isolate, built from the bindings (read as the
 * environment) on the first request. State lives in isolate memory (memory store and lease),
 * which suits a single-isolate deployment and tests; replicas need durable storage. With
 * TRACING_ENABLED, each response hands the flush of its spans to `ctx.waitUntil` once streamed.
 */
import { createApp, type App } from "../app.js";
import { isAppError, type SettingsError } from "../errors.js";
import { flushAfterResponse, workerTraceExport } from "./worker-tracing.js";

let app: Promise<App> | undefined;

/** Bad bindings: every request answers 500 naming the variables (never their values). */
function settingsFailure(error: unknown): Response {
  const problems = isAppError(error) && error.code === "invalid_settings" ? (error as SettingsError).problems : [];
  const detail = problems.length > 0 ? `Invalid settings: ${problems.map((p) => `${p.variable} ${p.message}`).join("; ")}.` : "The service failed to start.";
  return Response.json({ detail }, { status: 500 });
}

function hasWaitUntil(ctx: unknown): ctx is { waitUntil(promise: Promise<unknown>): void } {
  return typeof (ctx as { waitUntil?: unknown } | null)?.waitUntil === "function";
}

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Promise<Response> {
    if (!app) {
      const vars: Record<string, string> = {};
      for (const [k, v] of Object.entries(env)) if (typeof v === "string") vars[k] = v;
      // No files on workerd: a response schema or an API policy come as text bindings.
      const schema = vars.RESPONSE_SCHEMA ? (JSON.parse(vars.RESPONSE_SCHEMA) as Record<string, unknown>) : undefined;
      // HOST/PORT do not say where a worker is reached: without APP_URL the A2A card names the
      // origin each request came to (as `wrangler dev` or the route serves it).
      app = createApp({ env: vars, cardFollowsRequest: true, traceExport: workerTraceExport, ...(schema ? { responseSchema: schema } : {}), ...(vars.API_POLICY ? { policyText: vars.API_POLICY } : {}) });
    }
    let ready: App;
    try {
      ready = await app;
    } catch (error) {
      return settingsFailure(error);
    }
    const response = await ready.fetch(request, env, ctx);
    return ready.traces.enabled && hasWaitUntil(ctx) ? flushAfterResponse(response, ctx, ready.traces) : response;
  },
};
