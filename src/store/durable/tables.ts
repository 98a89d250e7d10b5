/**
 * Every table of the store object, as one synchronous object over its SQLite (./sql.ts): the
 * body of the store Durable Object, which calls one method per request. The writes a lease
 * fences arrive as data (`FencedWrite`), sent by the thread's lease object while it holds the
 * thread still (./objects.ts).
 */
import type { ApprovalRecord } from "../records/approval.js";
import type { Message, RunEnd, RunRecord } from "../ports.js";
import { approvalTables } from "./approvals.js";
import { runTables } from "./runs.js";
import { migrate } from "./schema.js";
import type { Sqlite } from "./sql.js";
import { taskTables } from "./tasks.js";
import { threadTables } from "./threads.js";

/** A write that goes in only while a lease holds the thread. */
export type FencedWrite =
  | { readonly kind: "append"; readonly threadId: string; readonly messages: readonly Message[]; readonly at: string }
  | { readonly kind: "createRun"; readonly run: RunRecord; readonly messages: readonly Message[]; readonly at: string }
  | { readonly kind: "finish"; readonly runId: string; readonly end: RunEnd; readonly threadId: string; readonly messages: readonly Message[]; readonly at: string };

export function sqliteTables(db: Sqlite) {
  migrate(db);
  const threads = threadTables(db);
  const runs = runTables(db, threads);
  const approvals = approvalTables(db);
  const tasks = taskTables(db);
  return {
    ...threads,
    ...runs,
    ...approvals,
    ...tasks,
    threadBlockers(threadId: string): { pending: ApprovalRecord[]; due: RunRecord | null } {
      return { pending: approvals.pendingOn(threadId), due: runs.dueOnThread(threadId) };
    },
    write(w: FencedWrite): void {
      if (w.kind === "append") threads.appendMessages(w.threadId, w.messages, w.at);
      else if (w.kind === "createRun") runs.createRun(w.run, { messages: w.messages, at: w.at });
      else runs.finish(w.runId, w.end, w.threadId, w.messages, w.at);
    },
  };
}

export type SqliteTables = ReturnType<typeof sqliteTables>;
