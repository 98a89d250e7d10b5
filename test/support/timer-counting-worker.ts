/**
 * The default worker with setInterval counted (test/runtime/worker-timers.test.ts): GET
 * /__intervals answers how many intervals anything in the isolate has started. An isolate keeps
 * no timers between requests, so the worker must start none: its background jobs run from the
 * cron trigger.
 */
import worker from "../../src/runtime/worker.js";

export { AgentStoreObject, ThreadLeaseObject } from "../../src/runtime/worker.js";

let intervals = 0;
const original = globalThis.setInterval;
globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
  intervals++;
  return original(...args);
}) as typeof setInterval;

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Promise<Response> {
    if (new URL(request.url).pathname === "/__intervals") return Response.json({ intervals });
    return worker.fetch(request, env, ctx);
  },
  scheduled: worker.scheduled,
};
