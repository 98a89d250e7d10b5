/** The threads table and each thread's messages on PostgreSQL. */
import { LeaseLost } from "../../errors.js";
import type { LeaseHandle, ListThreadsQuery, Message, ThreadStore } from "../ports.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { jsonb, threadOf } from "./rows.js";

export function createThreadStore(sql: Sql, guard: Guard): ThreadStore {
  const json = jsonb(sql);
  return {
    getThread: (id) => guard(async () => {
      const [r] = await sql`SELECT * FROM threads WHERE thread_id = ${id}`;
      return r ? threadOf(r) : null;
    }),
    createThread: (row) => guard(async () => {
      // DO UPDATE (a no-op) rather than DO NOTHING: it waits for a concurrent insert and returns
      // the stored row either way; xmax = 0 tells the caller that inserted it.
      const [r] = await sql`
        INSERT INTO threads (thread_id, owner, actor, created_at, updated_at)
        VALUES (${row.thread_id}, ${row.owner}, ${row.actor}, ${row.created_at}, ${row.updated_at})
        ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
        RETURNING *, (xmax = 0) AS created`;
      return { created: Boolean(r!.created), row: threadOf(r!) };
    }),
    listThreads: (q: ListThreadsQuery) => guard(async () => {
      const rows = await sql`
        SELECT * FROM threads
        WHERE (${q.owner ?? null}::text IS NULL OR owner = ${q.owner ?? null})
          AND (${q.actor ?? null}::text IS NULL OR actor = ${q.actor ?? null})
        ORDER BY updated_at DESC, thread_id ASC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(threadOf);
    }),
    idleThreads: (before, limit) => guard(async () => {
      const rows = await sql`SELECT thread_id FROM threads WHERE updated_at < ${before} ORDER BY updated_at LIMIT ${limit}`;
      return rows.map((r) => r.thread_id as string);
    }),
    deleteThread: (id) => guard(async () => {
      const rows = await sql`
        WITH l AS (DELETE FROM leases WHERE thread_id = ${id} RETURNING 1)
        DELETE FROM threads WHERE thread_id = ${id} AND (SELECT count(*) FROM l) >= 0 RETURNING 1`;
      return rows.length > 0;
    }),
    getMessages: (id) => guard(async () => {
      const rows = await sql`SELECT message FROM messages WHERE thread_id = ${id} ORDER BY seq`;
      return rows.map((r) => r.message as Message);
    }),
    appendMessages: (id, messages, at, fence?: LeaseHandle) => guard(async () => {
      if (messages.length === 0) return;
      const batch = json(messages);
      const [r] = fence
        ? await sql`
          WITH fence AS (SELECT 1 FROM leases WHERE thread_id = ${id} AND generation = ${fence.generation} AND expires_at > now()),
          ins AS (
            INSERT INTO messages (thread_id, message)
            SELECT ${id}, m FROM jsonb_array_elements(${batch}) WITH ORDINALITY AS t(m, n)
            WHERE EXISTS (SELECT 1 FROM fence) ORDER BY n RETURNING 1
          ),
          upd AS (UPDATE threads SET updated_at = ${at} WHERE thread_id = ${id} AND EXISTS (SELECT 1 FROM fence))
          SELECT count(*)::int AS n FROM ins`
        : await sql`
          WITH ins AS (
            INSERT INTO messages (thread_id, message)
            SELECT ${id}, m FROM jsonb_array_elements(${batch}) WITH ORDINALITY AS t(m, n) ORDER BY n RETURNING 1
          ),
          upd AS (UPDATE threads SET updated_at = ${at} WHERE thread_id = ${id})
          SELECT count(*)::int AS n FROM ins`;
      if (fence && r!.n !== messages.length) throw new LeaseLost();
    }),
  };
}
