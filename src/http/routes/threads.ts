/** Thread routes (spec 4.2): list, read messages, delete. */
import { Hono } from "hono";
import { canReadThread, ownsThread } from "../../auth/caller.js";
import type { Deps } from "../../deps.js";
import { forbidden, notFound, THREAD_FOREIGN, threadBusy } from "../../problems.js";
import type { ThreadRow } from "../../store/ports.js";
import type { HttpEnv } from "../env.js";
import { requireAuth } from "../middleware/auth.js";
import { listThreadsQuery, threadId } from "../schemas.js";
import { parseOrThrow } from "../validation.js";

const threadIdSchema = threadId();

const publicRow = ({ thread_id, owner, created_at, updated_at }: ThreadRow) => ({ thread_id, owner, created_at, updated_at });

export function threadRoutes(deps: Deps) {
  const { store, lease, ids } = deps;

  const load = async (id: string): Promise<ThreadRow> => {
    parseOrThrow(threadIdSchema, id, "path");
    const row = await store.getThread(id);
    if (!row) throw notFound("Thread not found.");
    return row;
  };

  return new Hono<HttpEnv>()
    .get("/threads", requireAuth(deps, "thread.list"), async (c) => {
      const caller = c.get("caller");
      const q = parseOrThrow(listThreadsQuery, c.req.query(), "query");
      if (q.scope === "all" && !caller.readAcross) throw forbidden("scope=all needs a read-across role.");
      const rows = await store.listThreads({
        limit: q.limit,
        offset: q.offset,
        ...(q.scope === "all" ? {} : { owner: caller.hash }),
        ...(q.scope === "own" && caller.principal.actor ? { actor: caller.principal.actor.id } : {}),
      });
      return c.json(rows.map(publicRow));
    })
    .get("/threads/:thread_id/messages", requireAuth(deps, "thread.read"), async (c) => {
      const row = await load(c.req.param("thread_id"));
      if (!canReadThread(c.get("caller"), row)) throw forbidden(THREAD_FOREIGN);
      return c.json(await store.getMessages(row.thread_id));
    })
    .delete("/threads/:thread_id", requireAuth(deps, "thread.delete"), async (c) => {
      const row = await load(c.req.param("thread_id"));
      if (!ownsThread(c.get("caller"), row)) throw forbidden(THREAD_FOREIGN);
      // Holding the lease while deleting keeps a run from starting on a half-deleted thread.
      const held = await lease.acquire(row.thread_id, `${deps.instanceId}:delete:${ids.runId()}`, deps.leaseTimings.ttlMs);
      if (!held) throw threadBusy();
      try {
        await store.deleteThread(row.thread_id);
      } finally {
        await lease.release(held);
      }
      return c.body(null, 204);
    });
}
