/** Thread routes (spec 4.2): list, read messages, delete. */
import { Hono } from "hono";
import { canReadThread, ownsThread } from "../../auth/caller.js";
import { forbidden, notFound } from "../../problems.js";
import { type Runs, THREAD_FOREIGN, threadBusy } from "../../runs/index.js";
import type { Settings } from "../../settings/parse.js";
import type { Store, ThreadRow } from "../../store/ports.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { listThreadsQuery, threadId } from "../schemas.js";
import { parseOrThrow } from "../validation.js";

const publicRow = ({ thread_id, owner, created_at, updated_at }: ThreadRow) => ({ thread_id, owner, created_at, updated_at });

export function threadRoutes({ store, runs, requireAuth, runtime }: { store: Store; runs: Runs; requireAuth: RequireAuth; runtime: Settings["runtime"] }) {
  const threadIdSchema = threadId(runtime);
  const load = async (id: string): Promise<ThreadRow> => {
    parseOrThrow(threadIdSchema, id, "path");
    const row = await store.getThread(id);
    if (!row) throw notFound("Thread not found.");
    return row;
  };

  return new Hono<HttpEnv>()
    .get("/threads", requireAuth("thread.list"), async (c) => {
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
    .get("/threads/:thread_id/messages", requireAuth("thread.read"), async (c) => {
      const row = await load(c.req.param("thread_id"));
      if (!canReadThread(c.get("caller"), row)) throw forbidden(THREAD_FOREIGN);
      return c.json(await store.getMessages(row.thread_id));
    })
    .delete("/threads/:thread_id", requireAuth("thread.delete"), async (c) => {
      const row = await load(c.req.param("thread_id"));
      if (!ownsThread(c.get("caller"), row)) throw forbidden(THREAD_FOREIGN);
      if (!(await runs.deleteThread(row.thread_id))) throw threadBusy();
      return c.body(null, 204);
    });
}
