/**
 * The workerd module worker: one app per isolate, built from the bindings (read as the
 * environment) on the first request or cron event. State lives in the Durable Objects the worker
 * exports (the store object's SQLite and a lease object per thread, shared by every isolate), or
 * in PostgreSQL through a Hyperdrive binding, each request on connections of its own
 * (src/runtime/workerd/storage.ts). The background jobs run from the cron trigger (`scheduled`),
 * not on timers. Each response, once streamed, hands `ctx.waitUntil` the work its runs left going
 * and, with TRACING_ENABLED, the flush of its spans.
 *
 * The default export serves the default agent. A deployment with tools of its own writes an entry
 * of two lines, `export default createWorker({ tools })` and the re-export of the two Durable
 * Object classes, and points wrangler.toml's `main` at it (workerd loads no TOOLS_MODULE).
 */
import { createApp, startFailureLines, type App, type CreateAppOptions } from "../app.js";
import { isAppError, SettingsError } from "../errors.js";
import { parseSettings } from "../settings/parse.js";
import { flushAfterResponse, workerTraceExport } from "./worker-tracing.js";
import { runScheduled } from "./workerd/scheduled.js";
import { type WorkerStorage, workerStorage } from "./workerd/storage.js";

export { ThreadLeaseObject } from "./workerd/lease-object.js";
export { AgentStoreObject } from "./workerd/store-object.js";

/** What a worker of one's own may pass to createApp; settings, storage and schedule come from the bindings. */
export type WorkerOptions = Pick<CreateAppOptions, "tools" | "system" | "model" | "authPolicy" | "approvalGate">;

export interface ModuleWorker {
  fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Promise<Response>;
  scheduled(controller: { readonly scheduledTime: number }, env: Record<string, unknown>): Promise<void>;
}

/**
 * A worker that cannot start answers every request 500: bad bindings naming the variables (never
 * their values); any other problem (the API policy's, a setting that cannot be used) by its kind
 * only, since a caller need not learn the deployment's APIs. The worker's log (`wrangler tail`)
 * names everything, once per isolate, as the Node entry does on stderr (startFailure).
 */
function startFailureResponse(error: unknown): Response {
  const code = isAppError(error) ? error.code : undefined;
  const detail =
    code === "invalid_settings"
      ? `Invalid settings: ${(error as SettingsError).problems.map((p) => `${p.variable} ${p.message}`).join("; ")}.`
      : code === "invalid_policy"
        ? "The service failed to start: the API policy has problems; the worker's log names them."
        : "The service failed to start; the worker's log says why.";
  return Response.json({ detail }, { status: 500 });
}

/** What the worker's log gets when it cannot start: what the Node entry prints on stderr. */
function startFailure(error: unknown): string {
  const lines = startFailureLines(error) ?? [`The service cannot start: ${error instanceof Error ? `${error.name}: ${error.message}` : "an unknown error"}`];
  return lines.join("\n");
}

/**
 * RESPONSE_SCHEMA (JSON text): one that does not parse is a bad binding, named with the others
 * the settings parse finds.
 */
function schemaBinding(vars: Readonly<Record<string, string>>): Record<string, unknown> | undefined {
  const text = vars.RESPONSE_SCHEMA;
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    let problems: SettingsError["problems"] = [];
    try {
      parseSettings(vars);
    } catch (error) {
      if (!isAppError(error) || error.code !== "invalid_settings") throw error;
      problems = (error as SettingsError).problems;
    }
    throw new SettingsError([...problems, { variable: "RESPONSE_SCHEMA", message: "is not JSON" }]);
  }
}

function hasWaitUntil(ctx: unknown): ctx is { waitUntil(promise: Promise<unknown>): void } {
  return typeof (ctx as { waitUntil?: unknown } | null)?.waitUntil === "function";
}

export function createWorker(options: WorkerOptions = {}): ModuleWorker {
  let app: Promise<App> | undefined;
  let scoped: WorkerStorage["scoped"] = (work) => work();

  const start = async (env: Record<string, unknown>): Promise<App> => {
    const given: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) if (typeof v === "string") given[k] = v;
    const { vars, ...storage } = workerStorage(env, given);
    scoped = storage.scoped;
    // No files on workerd: a response schema or an API policy come as text bindings.
    const schema = schemaBinding(vars);
    // HOST/PORT do not say where a worker is reached: without APP_URL the A2A card names the
    // origin each request came to (as `wrangler dev` or the route serves it).
    return createApp({
      ...options,
      env: vars,
      // /health says where state lives: the Durable Objects, PostgreSQL (sql) or isolate memory.
      ...(storage.store && storage.lease
        ? { storage: async (settings) => ({ store: storage.store!, lease: storage.lease!, persistence: { checkpointer: storage.checkpointer ?? settings.CHECKPOINTER } }) }
        : {}),
      intervalJobs: false,
      cardFollowsRequest: true,
      traceExport: workerTraceExport,
      ...(schema ? { responseSchema: schema } : {}),
      ...(vars.API_POLICY ? { policyText: vars.API_POLICY } : {}),
    });
  };
  /** One start per isolate: a failed one is kept (its cause is in the bindings), and logged once. */
  const appFor = (env: Record<string, unknown>): Promise<App> => {
    if (!app) {
      app = start(env);
      app.catch((error: unknown) => console.error(startFailure(error)));
    }
    return app;
  };

  return {
    async fetch(request, env, ctx) {
      let ready: App;
      try {
        ready = await appFor(env);
      } catch (error) {
        return startFailureResponse(error);
      }
      const response = await scoped(() => ready.fetch(request, env, ctx));
      if (!hasWaitUntil(ctx)) return response;
      // Once the response has been streamed: what the request's runs left going (their follow-ups
      // would be cut with the request's I/O), then the spans.
      const after = {
        async flush() {
          await ready.settled();
          if (ready.traces.enabled) await ready.traces.flush();
        },
      };
      return flushAfterResponse(response, ctx, after);
    },

    /** The cron trigger: the background jobs due at this firing. Bad settings fail the event (the dashboard shows it). */
    async scheduled(controller, env) {
      const ready = await appFor(env);
      await scoped(() => runScheduled(ready, controller.scheduledTime));
    },
  };
}

export default createWorker();
