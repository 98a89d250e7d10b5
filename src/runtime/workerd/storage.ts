/**
 * Where the worker keeps its state, from its bindings:
 * - CHECKPOINTER=sql: PostgreSQL, opened by createApp as on Node (see README, workerd);
 * - else the Durable Objects of wrangler.toml (AGENT_STORE, THREAD_LEASES): every table in the
 *   store object's SQLite, a lease object per thread; shared by every isolate;
 * - else, bindings missing: isolate memory, which a deployed worker loses between isolates and
 *   cannot share with a second one. Warned once.
 */
import { systemClock } from "../../clock.js";
import { createLogger } from "../../observability/logger.js";
import { createDurableLease, createDurableStore } from "../../store/durable/adapter.js";
import type { Store, ThreadLease } from "../../store/ports.js";
import { durableBindings, durableObjects } from "./bindings.js";

export function workerStorage(env: Readonly<Record<string, unknown>>, vars: Readonly<Record<string, string>>): { store?: Store; lease?: ThreadLease } {
  if (vars.CHECKPOINTER === "sql") return {};
  const bindings = durableBindings(env);
  if (!bindings) {
    createLogger({ level: "WARNING", format: "json", write: (line) => console.log(line) }).warning(
      "no AGENT_STORE and THREAD_LEASES Durable Object bindings: threads and leases live in this isolate's memory",
    );
    return {};
  }
  const objects = durableObjects(bindings);
  return { store: createDurableStore(objects, systemClock), lease: createDurableLease(objects) };
}
