/** The threads table and each thread's messages on PostgreSQL. */
import { LeaseLost } from "../../errors.js";
import type { LeaseHandle, ListThreadsQuery, Message, ThreadRow, ThreadStore } from "../ports.js";
import type { Fragment, Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { fenceOn } from "./lease.js";
import { jsonb, threadOf } from "./rows.js";

/**
 * The thread insert, written once: createThread here, and claimThread (postgres/runs.ts) after
 * the lease. `rows` selects (i, thread_id, owner, actor, created_at, updated_at), made in `i`
 * order. DO UPDATE (a no-op) rather than DO NOTHING: it waits for a concurrent insert and
 * returns the stored row either way; xmax = 0 tells the caller that inserted it.
 */
export const insertThreads = (sql: Sql, rows: Fragment): Fragment => sql`
  INSERT INTO threads (thread_id, owner, actor, created_at, updated_at)
  SELECT r.thread_id, r.owner, r.actor, r.created_at, r.updated_at
  FROM (${rows}) AS r(i, thread_id, owner, actor, created_at, updated_at) ORDER BY r.i
  ON CONFLICT (thread_id) DO UPDATE SET thread_id = excluded.thread_id
  RETURNING *, (xmax = 0) AS created`;

/** One thread row as insertThreads takes it; `gate` (a condition) holds the insert back, or lets it go. */
export const threadRow = (sql: Sql, row: ThreadRow, gate: Fragment = sql`true`): Fragment =>
  sql`SELECT 0, ${row.thread_id}::text, ${row.owner}::text, ${row.actor}::text, ${row.created_at}::timestamptz, ${row.updated_at}::timestamptz WHERE ${gate}`;

/**
 * The message insert, written once: every write that appends messages goes through it.
 * `rows` selects (i, thread_id, messages), only the rows whose fence holds; the messages go in
 * row order, then array order, and a row per message written comes back.
 */
export const insertMessages = (sql: Sql, rows: Fragment): Fragment => sql`
  INSERT INTO messages (thread_id, message)
  SELECT a.thread_id, e.m FROM (${rows}) AS a(i, thread_id, messages)
    CROSS JOIN LATERAL jsonb_array_elements(a.messages) WITH ORDINALITY AS e(m, n)
  ORDER BY a.i, e.n RETURNING 1`;

/** One thread's messages as insertMessages takes them, where the CTE `gate` has a row. */
export const threadMessages = (sql: Sql, threadId: string, messages: readonly Message[], gate: Fragment): Fragment =>
  sql`SELECT 0, ${threadId}::text, ${jsonb(sql)(messages)}::jsonb WHERE EXISTS (SELECT 1 FROM ${gate})`;

/**
 * The fenced append to one thread, as the CTEs `ins` (a row per message) and `upd`: its messages
 * and its `updated_at`, both only where the statement's CTE `fence` has a row.
 */
export const appendFenced = (sql: Sql, threadId: string, messages: readonly Message[], at: string): Fragment => sql`
  ins AS (${insertMessages(sql, threadMessages(sql, threadId, messages, sql`fence`))}),
  upd AS (UPDATE threads SET updated_at = ${at} WHERE thread_id = ${threadId} AND EXISTS (SELECT 1 FROM fence))`;

export function createThreadStore(sql: Sql, guard: Guard): ThreadStore {
  return {
    getThread: (id) => guard(async () => {
      const [r] = await sql`SELECT * FROM threads WHERE thread_id = ${id}`;
      return r ? threadOf(r) : null;
    }),
    createThread: (row) => guard(async () => {
      const [r] = await insertThreads(sql, threadRow(sql, row));
      return { created: Boolean(r!.created), row: threadOf(r!) };
    }),
    listThreads: (q: ListThreadsQuery) => guard(async () => {
      // Only the filters given, each combination a statement of its own: a filter written as
      // `($1 IS NULL OR owner = $1)` cannot use the owner's index in a generic plan.
      const owner = q.owner === undefined ? sql`` : sql`AND owner = ${q.owner}`;
      const actor = q.actor === undefined ? sql`` : sql`AND actor = ${q.actor}`;
      const rows = await sql`
        SELECT * FROM threads WHERE true ${owner} ${actor}
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
    getMessagePage: (id, page) => guard(async () => {
      // The anchor is found by its id (index messages_id); the page by seq, newest first, then turned.
      const anchor = page.before ?? page.after;
      const rows = anchor === undefined
        ? await sql`SELECT message FROM messages WHERE thread_id = ${id} ORDER BY seq DESC LIMIT ${page.limit}`
        : await sql`
            WITH a AS (SELECT seq FROM messages WHERE (message->>'id') = ${anchor} AND thread_id = ${id})
            SELECT message FROM (
              SELECT NULL::jsonb AS message, 0::bigint AS seq FROM a
              UNION ALL (
                SELECT m.message, m.seq FROM messages m, a
                WHERE m.thread_id = ${id} AND ${page.before !== undefined ? sql`m.seq < a.seq` : sql`m.seq > a.seq`}
                ORDER BY m.seq ${page.before !== undefined ? sql`DESC` : sql`ASC`} LIMIT ${page.limit})
            ) u
            ORDER BY (message IS NOT NULL), seq ${page.before !== undefined ? sql`DESC` : sql`ASC`}`;
      if (anchor === undefined) return rows.map((r) => r.message as Message).reverse();
      // The first row marks that the anchor exists; the page follows it. Sorted so by the outer
      // ORDER BY: UNION ALL alone does not promise to keep its branches in order.
      if (rows.length === 0) return null;
      const page$ = rows.slice(1).map((r) => r.message as Message);
      return page.before !== undefined ? page$.reverse() : page$;
    }),
    appendMessages: (id, messages, at, fence?: LeaseHandle) => guard(async () => {
      if (messages.length === 0) return;
      const [r] = await sql`
        WITH fence AS (${fenceOn(sql, id, fence?.generation ?? null)}), ${appendFenced(sql, id, messages, at)}
        SELECT count(*)::int AS n FROM ins`;
      if (fence && r!.n !== messages.length) throw new LeaseLost();
    }),
  };
}
