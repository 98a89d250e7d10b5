/**
 * The A2A tasks table in SQLite (synchronous: see ./sql.ts). Stored task text holds U+FFFD in
 * place of U+0000 (spec 2.5), as in PostgreSQL and the memory store.
 */
import { hasNul, withoutNul } from "../../json.js";
import type { TaskCursor } from "../ports/tasks.js";
import { FINISHED, type ListTasksQuery, type TaskRecord } from "../records/task.js";
import { givenFilters, parsed, type Sqlite, type SqlValue } from "./sql.js";

type TaskPatch = Partial<Omit<TaskRecord, "task_id" | "context_id" | "owner" | "actor" | "created_at">>;

/**
 * The settling sweep's read (every 30 s): bindings before, the cursor's updated_at three times
 * and its task_id, and the limit. Its first term is tasks_open's own WHERE, word for word, which
 * is what lets SQLite read the tasks not finished through that index instead of every task kept.
 */
export const STRANDED_WHERE =
  "state IN ('input-required', 'working') AND updated_at < ? AND (? IS NULL OR updated_at > ? OR (updated_at = ? AND task_id > ?)) " +
  "AND (((state = 'input-required' OR (state = 'working' AND run_id IS NULL)) AND json_array_length(approval_ids) > 0 " +
  "AND NOT EXISTS (SELECT 1 FROM json_each(tasks.approval_ids) AS j JOIN approvals a ON a.approval_id = j.value WHERE a.status = 'pending')) " +
  "OR (state = 'working' AND EXISTS (SELECT 1 FROM runs r WHERE r.run_id = tasks.run_id AND r.status <> 'running'))) " +
  "ORDER BY updated_at, task_id LIMIT ?";

export function taskTables(db: Sqlite) {
  const put = (given: TaskRecord) => {
    const t = hasNul(given) ? withoutNul(given) : given;
    db.exec(
      `INSERT INTO tasks (task_id, context_id, owner, actor, state, run_id, approval_ids, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (task_id) DO UPDATE SET context_id = excluded.context_id, owner = excluded.owner, actor = excluded.actor,
         state = excluded.state, run_id = excluded.run_id, approval_ids = excluded.approval_ids, updated_at = excluded.updated_at, body = excluded.body`,
      t.task_id, t.context_id, t.owner, t.actor, t.state, t.run_id, JSON.stringify(t.approval_ids), t.updated_at, JSON.stringify(t),
    );
  };
  const select = (where: string, ...bindings: SqlValue[]): TaskRecord[] =>
    db.exec<{ body: string }>(`SELECT body FROM tasks WHERE ${where}`, ...bindings).toArray().map((r) => parsed<TaskRecord>(r.body));
  const getTask = (taskId: string): TaskRecord | null => select("task_id = ?", taskId)[0] ?? null;

  return {
    createTask: put,
    getTask,

    updateTask(taskId: string, patch: TaskPatch, ifUpdatedAt?: string): boolean {
      const t = getTask(taskId);
      if (!t || FINISHED.has(t.state) || (ifUpdatedAt !== undefined && Date.parse(t.updated_at) !== Date.parse(ifUpdatedAt))) return false;
      put({ ...t, ...patch });
      return true;
    },

    listTasks(q: ListTasksQuery): TaskRecord[] {
      // Only the filters given (see sql.ts, givenFilters).
      const where = givenFilters([["owner = ?", q.owner], ["actor = ?", q.actor], ["context_id = ?", q.context_id]]);
      return select(`${where.sql} ORDER BY updated_at DESC, task_id DESC LIMIT ? OFFSET ?`, ...where.bindings, q.limit, q.offset);
    },

    tasksWaitingOn(threadId: string, approvalId: string): TaskRecord[] {
      return select(
        // Asking for a decision, or queued on one (working, and no run carries it yet).
        "context_id = ? AND (state = 'input-required' OR (state = 'working' AND run_id IS NULL)) AND EXISTS (SELECT 1 FROM json_each(tasks.approval_ids) AS j WHERE j.value = ?)",
        threadId, approvalId,
      );
    },

    strandedTasks(before: string, limit: number, after?: TaskCursor): TaskRecord[] {
      return select(STRANDED_WHERE, before, after?.updated_at ?? null, after?.updated_at ?? null, after?.updated_at ?? null, after?.task_id ?? null, limit);
    },

    dropTasksBefore(before: string): number {
      return db.exec("DELETE FROM tasks WHERE updated_at < ? RETURNING task_id", before).toArray().length;
    },
  };
}
