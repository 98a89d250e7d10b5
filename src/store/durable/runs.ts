/**
 * The runs table in SQLite, and the run's steps that span tables (claim, finish, blockers), as
 * the store object carries them out. What the lease decides (whether the claim took the thread,
 * whether a fenced write may go in) is decided by the thread's lease object before it asks for
 * these writes (./writes.ts); here they are plain writes, each in one transaction.
 */
import type { Message, RunEnd, RunRecord, RunStart, ThreadRow } from "../ports.js";
import { parsed, type Sqlite } from "./sql.js";
import type { ThreadTables } from "./threads.js";

/** The status parts of a task whose run died with its process (spec 3.3), as Postgres writes them. */
const LOST_TASK_PARTS = [
  { kind: "text", text: "The process running the task ended." },
  { kind: "data", data: { type: "error", code: "run_failed" } },
];

/** Paused, with a decided approval, not resumed yet. */
const DUE = `status = 'awaiting_approval' AND resumed_by IS NULL
  AND EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = runs.run_id AND a.status <> 'pending')`;

export function runTables(db: Sqlite, threads: ThreadTables) {
  const put = (run: RunRecord) =>
    db.exec(
      `INSERT INTO runs (run_id, thread_id, status, resumed_by, created_at, body) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET thread_id = excluded.thread_id, status = excluded.status,
         resumed_by = excluded.resumed_by, created_at = excluded.created_at, body = excluded.body`,
      run.run_id, run.thread_id, run.status, run.resumed_by, run.created_at, JSON.stringify(run),
    );
  const getRun = (runId: string): RunRecord | null => {
    const r = db.exec<{ body: string }>("SELECT body FROM runs WHERE run_id = ?", runId).toArray()[0];
    return r ? parsed<RunRecord>(r.body) : null;
  };
  const runs = (query: string, ...bindings: (string | number)[]) =>
    db.exec<{ body: string }>(query, ...bindings).toArray().map((r) => parsed<RunRecord>(r.body));
  const updateRun = (runId: string, patch: Partial<RunRecord>) => {
    const run = getRun(runId);
    if (run) put({ ...run, ...patch, run_id: run.run_id, thread_id: run.thread_id });
  };
  const createRun = (run: RunRecord, append?: { readonly messages: readonly Message[]; readonly at: string }) =>
    db.transaction(() => {
      put(run);
      if (append) threads.appendMessages(run.thread_id, append.messages, append.at);
    });

  return {
    createRun,
    updateRun,
    getRun,

    listRuns(threadId: string): RunRecord[] {
      return runs("SELECT body FROM runs WHERE thread_id = ? ORDER BY created_at, run_id", threadId);
    },

    /**
     * createThread, and the run's record and first messages when it made the thread and the
     * caller took its lease (`start` is only passed then).
     */
    claim(row: ThreadRow, start: RunStart | null): { created: boolean; row: ThreadRow; started: boolean } {
      return db.transaction(() => {
        const made = threads.createThread(row);
        const started = made.created && start !== null;
        if (started) createRun(start.run, { messages: start.messages, at: start.run.created_at });
        return { ...made, started };
      });
    },

    /** The run's last messages and its end, in one transaction. */
    finish(runId: string, end: RunEnd, threadId: string, messages: readonly Message[], at: string): void {
      db.transaction(() => {
        threads.appendMessages(threadId, messages, at);
        updateRun(runId, end);
      });
    },

    /** The thread's oldest paused run that is due to resume (threadBlockers' second half). */
    dueOnThread(threadId: string): RunRecord | null {
      return runs(`SELECT body FROM runs WHERE thread_id = ? AND ${DUE} ORDER BY created_at, run_id LIMIT 1`, threadId)[0] ?? null;
    },

    dueRuns(limit: number): RunRecord[] {
      return runs(`SELECT body FROM runs WHERE ${DUE} ORDER BY created_at, run_id LIMIT ?`, limit);
    },

    markResumed(runId: string, by: string): boolean {
      const run = getRun(runId);
      if (!run || run.resumed_by !== null) return false;
      put({ ...run, resumed_by: by });
      return true;
    },

    /** Runs still `running` that started before `before`: whether their lease lapsed is the lease objects' to say. */
    runningBefore(before: string): { run_id: string; thread_id: string }[] {
      return db
        .exec<{ run_id: string; thread_id: string }>("SELECT run_id, thread_id FROM runs WHERE status = 'running' AND created_at < ? LIMIT 500", before)
        .toArray()
        .map((r) => ({ run_id: r.run_id, thread_id: r.thread_id }));
    },

    /** Marks these runs interrupted (ProcessLost) where still running, failing their working tasks; returns how many. */
    markLost(runIds: readonly string[], at: string): number {
      return db.transaction(() => {
        let n = 0;
        for (const runId of runIds) {
          const run = getRun(runId);
          if (!run || run.status !== "running") continue;
          put({ ...run, status: "interrupted", error_type: "ProcessLost", updated_at: at, ended_at: at });
          n++;
          for (const t of db.exec<{ body: string }>("SELECT body FROM tasks WHERE run_id = ? AND state = 'working'", runId).toArray()) {
            const task = parsed<Record<string, unknown>>(t.body);
            const failed = { ...task, state: "failed", status_parts: LOST_TASK_PARTS, updated_at: at };
            db.exec("UPDATE tasks SET state = 'failed', updated_at = ?, body = ? WHERE task_id = ?", at, JSON.stringify(failed), String(task.task_id));
          }
        }
        return n;
      });
    },
  };
}
