/**
 * The Durable Object bindings of the worker (wrangler.toml): AGENT_STORE, the one store object
 * (every table, in its SQLite), and THREAD_LEASES, one lease object per thread id.
 */
import type { DurableObjects, LeaseObjectApi, StoreObjectApi } from "../../store/durable/objects.js";

/** A Durable Object namespace binding, as far as this entry uses it. */
interface Namespace {
  idFromName(name: string): unknown;
  get(id: unknown): unknown;
}

export interface DurableBindings {
  readonly AGENT_STORE: Namespace;
  readonly THREAD_LEASES: Namespace;
}

/** The name of the one store object. */
const STORE_NAME = "store";

const isNamespace = (value: unknown): value is Namespace =>
  typeof value === "object" && value !== null && typeof (value as Namespace).idFromName === "function" && typeof (value as Namespace).get === "function";

/** The two bindings, or null when the worker was deployed without them. */
export function durableBindings(env: Readonly<Record<string, unknown>>): DurableBindings | null {
  const { AGENT_STORE, THREAD_LEASES } = env;
  return isNamespace(AGENT_STORE) && isNamespace(THREAD_LEASES) ? { AGENT_STORE, THREAD_LEASES } : null;
}

/** RPC stubs, made per call: a stub is cheap, and one kept across requests would tie I/O to the request that made it. */
export function durableObjects(bindings: DurableBindings): DurableObjects {
  const { AGENT_STORE, THREAD_LEASES } = bindings;
  return {
    store: () => AGENT_STORE.get(AGENT_STORE.idFromName(STORE_NAME)) as StoreObjectApi,
    lease: (threadId) => THREAD_LEASES.get(THREAD_LEASES.idFromName(threadId)) as LeaseObjectApi,
  };
}
