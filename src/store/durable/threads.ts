/** The threads and messages tables in SQLite (synchronous: see ./sql.ts). */
import type { ListThreadsQuery, Message, MessagePage, ThreadRow } from "../ports.js";
import { first, givenFilters, parsed, type Sqlite, type Statement } from "./sql.js";

interface ThreadColumns {
  [k: string]: string | null;
  thread_id: string;
  owner: string;
  actor: string | null;
  created_at: string;
  updated_at: string;
}

const rowOf = (r: ThreadColumns): ThreadRow => ({ thread_id: r.thread_id, owner: r.owner, actor: r.actor, created_at: r.created_at, updated_at: r.updated_at });

/** GET /threads: only the filters given, so that an owner's threads are read through threads_by_owner. */
export function threadListQuery(q: ListThreadsQuery): Statement {
  const where = givenFilters([["owner = ?", q.owner], ["actor = ?", q.actor]]);
  return { sql: `SELECT * FROM threads WHERE ${where.sql} ORDER BY updated_at DESC, thread_id ASC LIMIT ? OFFSET ?`, bindings: [...where.bindings, q.limit, q.offset] };
}

export function threadTables(db: Sqlite) {
  const getThread = (threadId: string): ThreadRow | null => {
    const r = first<ThreadColumns>(db, "SELECT * FROM threads WHERE thread_id = ?", threadId);
    return r ? rowOf(r) : null;
  };

  return {
    getThread,

    createThread(row: ThreadRow): { created: boolean; row: ThreadRow } {
      const existing = getThread(row.thread_id);
      if (existing) return { created: false, row: existing };
      db.exec(
        "INSERT INTO threads (thread_id, owner, actor, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        row.thread_id, row.owner, row.actor, row.created_at, row.updated_at,
      );
      return { created: true, row };
    },

    listThreads(q: ListThreadsQuery): ThreadRow[] {
      const { sql, bindings } = threadListQuery(q);
      return db.exec<ThreadColumns>(sql, ...bindings).toArray().map(rowOf);
    },

    idleThreads(before: string, limit: number): string[] {
      return db
        .exec<{ thread_id: string }>("SELECT thread_id FROM threads WHERE updated_at < ? ORDER BY updated_at, thread_id LIMIT ?", before, limit)
        .toArray()
        .map((r) => r.thread_id);
    },

    /** The thread and everything attached to it, in one transaction. */
    deleteThread(threadId: string): boolean {
      return db.transaction(() => {
        if (!getThread(threadId)) return false;
        db.exec("DELETE FROM messages WHERE thread_id = ?", threadId);
        db.exec("DELETE FROM runs WHERE thread_id = ?", threadId);
        db.exec("DELETE FROM approvals WHERE thread_id = ?", threadId);
        db.exec("DELETE FROM tasks WHERE context_id = ?", threadId);
        db.exec("DELETE FROM threads WHERE thread_id = ?", threadId);
        return true;
      });
    },

    getMessages(threadId: string): Message[] {
      return db
        .exec<{ body: string }>("SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", threadId)
        .toArray()
        .map((r) => parsed<Message>(r.body));
    },

    getMessagePage(threadId: string, page: MessagePage): Message[] | null {
      const anchor = page.before ?? page.after;
      let rows: { body: string }[];
      if (anchor === undefined) {
        rows = db.exec<{ body: string }>("SELECT body FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT ?", threadId, page.limit).toArray().reverse();
      } else {
        const at = first<{ seq: number }>(db, "SELECT seq FROM messages WHERE json_extract(body, '$.id') = ? AND thread_id = ?", anchor, threadId)?.seq;
        if (at === undefined) return null;
        rows =
          page.before !== undefined
            ? db.exec<{ body: string }>("SELECT body FROM messages WHERE thread_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?", threadId, at, page.limit).toArray().reverse()
            : db.exec<{ body: string }>("SELECT body FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?", threadId, at, page.limit).toArray();
      }
      return rows.map((r) => parsed<Message>(r.body));
    },

    /** Appends in order and bumps updated_at; nothing for a thread that does not exist (as in memory). */
    appendMessages(threadId: string, messages: readonly Message[], at: string): void {
      db.transaction(() => {
        if (!getThread(threadId)) return;
        const last = first<{ seq: number | null }>(db, "SELECT max(seq) AS seq FROM messages WHERE thread_id = ?", threadId)?.seq ?? 0;
        messages.forEach((m, i) => db.exec("INSERT INTO messages (thread_id, seq, body) VALUES (?, ?, ?)", threadId, last + i + 1, JSON.stringify(m)));
        db.exec("UPDATE threads SET updated_at = ? WHERE thread_id = ?", at, threadId);
      });
    },
  };
}

export type ThreadTables = ReturnType<typeof threadTables>;
