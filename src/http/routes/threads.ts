/** Thread routes (spec 4.2): list, read messages, delete. */
import { Hono } from "hono";
import { canReadThread, ownsThread } from "../../auth/caller.js";
import { forbidden, notFound, unprocessable } from "../../problems.js";
import { type Runs, THREAD_FOREIGN, threadBusy } from "../../runs/index.js";
import type { Settings } from "../../settings/parse.js";
import type { Store, ThreadRow } from "../../store/ports.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { listThreadsQuery, messagesQuery, threadId } from "../schemas.js";
import { parseOrThrow } from "../validation.js";

/**
 * One page of a thread's messages (spec 4.2, paged for issue 20): the newest `limit` (all of a
 * thread up to 1000 messages: the answer unpaged), or those next to a message; whether older or
 * newer messages lie beyond it, for the Link header (RFC 8288) that names the next pages. An
 * unknown message id is a 422.
 */
async function messagePage(store: Store, threadId: string, q: { limit: number; before?: string | undefined; after?: string | undefined }) {
  // One more than asked tells whether the page reaches the thread's end on its far side.
  const got = await store.getMessagePage(threadId, { limit: q.limit + 1, before: q.before, after: q.after });
  if (got === null) {
    const field = q.before !== undefined ? "before" : "after";
    throw unprocessable([{ type: "value_error", loc: ["query", field], msg: "No message of this thread has this id", ctx: {} }]);
  }
  const over = got.length > q.limit;
  if (q.after !== undefined) return { messages: over ? got.slice(0, q.limit) : got, older: got.length > 0, newer: over };
  const messages = over ? got.slice(1) : got;
  return { messages, older: over, newer: q.before !== undefined && messages.length > 0 };
}

const pageUrl = (threadId: string, side: "before" | "after", id: string, limit: number) =>
  `/threads/${encodeURIComponent(threadId)}/messages?${side}=${encodeURIComponent(id)}&limit=${limit}`;

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
      const q = parseOrThrow(messagesQuery, c.req.query(), "query");
      const { messages, older, newer } = await messagePage(store, row.thread_id, q);
      const links = [
        ...(older ? [`<${pageUrl(row.thread_id, "before", messages[0]!.id, q.limit)}>; rel="prev"`] : []),
        ...(newer ? [`<${pageUrl(row.thread_id, "after", messages.at(-1)!.id, q.limit)}>; rel="next"`] : []),
      ];
      if (links.length > 0) c.header("Link", links.join(", "));
      return c.json(messages);
    })
    .delete("/threads/:thread_id", requireAuth("thread.delete"), async (c) => {
      const row = await load(c.req.param("thread_id"));
      if (!ownsThread(c.get("caller"), row)) throw forbidden(THREAD_FOREIGN);
      if (!(await runs.deleteThread(row.thread_id))) throw threadBusy();
      return c.body(null, 204);
    });
}
