/**
 * A test worker around the Durable Object adapters (built by ./workerd.ts, run in workerd
 * by Miniflare): POST /<lease|store>/<method> with the arguments as a JSON array calls that method
 * of the adapter inside workerd and answers `{result}` or `{error: {code, message}}`. The contract
 * suites then run in Node against these answers, while the adapters, the objects and their
 * storage are the ones the worker deploys.
 */
import { createDurableLease, createDurableStore } from "../../src/store/durable/adapter.js";
import { durableBindings, durableObjects } from "../../src/runtime/workerd/bindings.js";
import { ThreadLeaseObject as LeaseObject } from "../../src/runtime/workerd/lease-object.js";

import { AgentStoreObject as StoreObject } from "../../src/runtime/workerd/store-object.js";
import type { SqlValue } from "../../src/store/durable/sql.js";

/** The deployed class, plus SQLite's plan of a query (POST /storeObject/plan [query, bindings]). */
export class AgentStoreObject extends StoreObject {
  plan(query: string, bindings: SqlValue[]): string[] {
    return this.ctx.storage.sql.exec(`EXPLAIN QUERY PLAN ${query}`, ...bindings).toArray().map((r) => String(r.detail));
  }
}

/** What a lease object keeps: its stored state and its alarm (POST /leaseObject/inspect [threadId]). */
export interface LeaseStorage {
  readonly state: { holder: string | null; generation: number; expiresAt: number } | null;
  readonly alarm: number | null;
}

/** The deployed class, plus a look at its storage, so tests see what its alarm did. */
export class ThreadLeaseObject extends LeaseObject {
  async inspect(): Promise<LeaseStorage> {
    // getAlarm is workerd's; src/runtime/workerd/cloudflare.d.ts declares only what the objects use.
    const storage = this.ctx.storage as typeof this.ctx.storage & { getAlarm(): Promise<number | null> };
    return { state: (await storage.get<LeaseStorage["state"]>("lease")) ?? null, alarm: await storage.getAlarm() };
  }
}

export default {
  async fetch(request: Request, env: Record<string, unknown>): Promise<Response> {
    const bindings = durableBindings(env);
    if (!bindings) return Response.json({ error: { code: "internal", message: "no bindings" } }, { status: 500 });
    const objects = durableObjects(bindings);
    const ports: Record<string, object> = {
      lease: createDurableLease(objects),
      store: createDurableStore(objects, { now: () => Date.now() }),
      leaseObject: { inspect: (threadId: string) => (objects.lease(threadId) as unknown as ThreadLeaseObject).inspect() },
      storeObject: { plan: (query: string, bindings: SqlValue[]) => (objects.store() as unknown as AgentStoreObject).plan(query, bindings) },
    };
    const [, port = "", method = ""] = new URL(request.url).pathname.split("/");
    const target = ports[port] as Record<string, (...args: unknown[]) => Promise<unknown>> | undefined;
    if (!target || typeof target[method] !== "function") return Response.json({ error: { code: "internal", message: `no ${port}.${method}` } }, { status: 404 });
    const args = (await request.json()) as unknown[];
    try {
      const result = await target[method]!(...args);
      return Response.json(result === undefined ? {} : { result });
    } catch (error) {
      const e = error as { code?: string; message?: string };
      return Response.json({ error: { code: e.code ?? "internal", message: String(e.message) } });
    }
  },
};
