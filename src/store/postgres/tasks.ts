/** The A2A tasks table on PostgreSQL. */
import type { TaskStore } from "../ports.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { jsonb, taskOf } from "./rows.js";

export function createTaskStore(sql: Sql, guard: Guard): TaskStore {
  const json = jsonb(sql);
  return {
    createTask: (t) => guard(async () => {
      await sql`
        INSERT INTO a2a_tasks (task_id, context_id, owner, actor, state, status_parts, artifacts, approval_ids, run_id, instance_id, created_at, updated_at)
        VALUES (${t.task_id}, ${t.context_id}, ${t.owner}, ${t.actor}, ${t.state}, ${json(t.status_parts)}, ${json(t.artifacts)},
                ${sql.array([...t.approval_ids])}, ${t.run_id}, ${t.instance_id}, ${t.created_at}, ${t.updated_at})`;
    }),
    getTask: (id) => guard(async () => {
      const [r] = await sql`SELECT * FROM a2a_tasks WHERE task_id = ${id}`;
      return r ? taskOf(r) : null;
    }),
    updateTask: (id, patch, ifUpdatedAt) => guard(async () => {
      const values: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined) continue;
        values[k] = k === "status_parts" || k === "artifacts" ? json(v) : k === "approval_ids" ? sql.array([...(v as string[])]) : v;
      }
      const open = sql`state NOT IN ('completed', 'failed', 'canceled') AND (${ifUpdatedAt ?? null}::timestamptz IS NULL OR updated_at = ${ifUpdatedAt ?? null}::timestamptz)`;
      if (Object.keys(values).length === 0) return (await sql`SELECT 1 FROM a2a_tasks WHERE task_id = ${id} AND ${open}`).length > 0;
      return (await sql`UPDATE a2a_tasks SET ${sql(values)} WHERE task_id = ${id} AND ${open} RETURNING 1`).length > 0;
    }),
    listTasks: (q) => guard(async () => {
      // Only the filters given (see listThreads).
      const actor = q.actor === undefined ? sql`` : sql`AND actor = ${q.actor}`;
      const context = q.context_id === undefined ? sql`` : sql`AND context_id = ${q.context_id}`;
      const rows = await sql`
        SELECT * FROM a2a_tasks WHERE owner = ${q.owner} ${actor} ${context}
        ORDER BY updated_at DESC, task_id DESC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(taskOf);
    }),
    tasksWaitingOn: (threadId, approvalId) => guard(async () => {
      // Asking for a decision, or queued on one (working, and no run carries it yet).
      const rows = await sql`SELECT * FROM a2a_tasks WHERE context_id = ${threadId} AND (state = 'input-required' OR (state = 'working' AND run_id IS NULL)) AND ${approvalId} = ANY (approval_ids)`;
      return rows.map(taskOf);
    }),
    strandedTasks: (before, limit, after) => guard(async () => {
      const next = after ? sql`AND (t.updated_at, t.task_id) > (${after.updated_at}::timestamptz, ${after.task_id})` : sql``;
      // Only a task not finished can be stranded: read through a2a_tasks_open, not every task kept.
      const rows = await sql`
        SELECT * FROM a2a_tasks t
          WHERE t.state IN ('input-required', 'working') AND t.updated_at < ${before} ${next} AND (
            ((t.state = 'input-required' OR (t.state = 'working' AND t.run_id IS NULL)) AND cardinality(t.approval_ids) > 0
              AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.approval_id = ANY (t.approval_ids) AND a.status = 'pending'))
            OR (t.state = 'working' AND EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.run_id AND r.status <> 'running')))
          ORDER BY t.updated_at, t.task_id LIMIT ${limit}`;
      return rows.map(taskOf);
    }),
    dropTasksBefore: (before) => guard(async () => {
      // Every minute on every replica: through a2a_tasks_updated, only the tasks past their time.
      const rows = await sql`DELETE FROM a2a_tasks WHERE updated_at < ${before} RETURNING 1`;
      return rows.length;
    }),
  };
}
