/**
 * The default worker with setInterval counted (test/runtime/worker-timers.test.ts): GET
 * /__intervals answers how many intervals anything in the isolate has started, and how many of
 * them are still running. An isolate keeps no timers between requests, so the worker must leave
 * none running: its background jobs run from the cron trigger. (A run's own timer, an interval
 * of the lease renewal period, lives as long as the run and is cleared when it ends.)
 */
import worker from "../../src/runtime/worker.js";

export { AgentStoreObject, ThreadLeaseObject } from "../../src/runtime/worker.js";

let intervals = 0;
const running = new Set<unknown>();
const originalSet = globalThis.setInterval;
const originalClear = globalThis.clearInterval;
globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
  intervals++;
  const id = originalSet(...args);
  running.add(id);
  return id;
}) as typeof setInterval;
globalThis.clearInterval = ((id?: Parameters<typeof clearInterval>[0]) => {
  running.delete(id);
  return originalClear(id);
}) as typeof clearInterval;

export default {
  async fetch(request: Request, env: Record<string, unknown>, ctx: unknown): Promise<Response> {
    if (new URL(request.url).pathname === "/__intervals") return Response.json({ intervals, running: running.size });
    return worker.fetch(request, env, ctx);
  },
  scheduled: worker.scheduled,
};
