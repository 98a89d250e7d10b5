/** In-process Store: the default adapter and the reference the contract suite holds others to. */
import type { ListTasksQuery, TaskRecord } from "../records/task.js";
import type { ApprovalRecord, ListApprovalsQuery } from "../records/approval.js";
import { withDecision } from "../records/decision.js";
import { pageOfMessages } from "../records/messages.js";
import { LeaseLost } from "../../errors.js";
import { hasNul, withoutNul } from "../../json.js";
import type { ListThreadsQuery, Message, RunRecord, Store, ThreadRow } from "../ports.js";

interface ThreadEntry {
  row: ThreadRow;
  messages: Message[];
  /** Its run ids, oldest first (an array: a Set costs 150 bytes a thread more). */
  runs: string[];
}

export function createMemoryStore(): Store {
  const threads = new Map<string, ThreadEntry>();
  const runs = new Map<string, RunRecord>();
  const approvals = new Map<string, ApprovalRecord>();
  const tasks = new Map<string, TaskRecord>();

  const createThread = (row: ThreadRow) => {
    const existing = threads.get(row.thread_id);
    if (existing) return { created: false, row: existing.row };
    threads.set(row.thread_id, { row, messages: [], runs: [] });
    return { created: true, row };
  };
  const append = (threadId: string, messages: readonly Message[], at: string) => {
    const entry = threads.get(threadId);
    if (!entry) return;
    entry.messages.push(...messages);
    entry.row = { ...entry.row, updated_at: at };
  };
  const approvalsOfRun = (runId: string) => [...approvals.values()].filter((a) => a.run_id === runId);
  /** Paused, with a decided approval, not resumed yet. */
  const isDue = (run: RunRecord) =>
    run.status === "awaiting_approval" && run.resumed_by === null && approvalsOfRun(run.run_id).some((a) => a.status !== "pending");
  const newestFirst = (a: ApprovalRecord, b: ApprovalRecord) =>
    a.created_at === b.created_at ? (a.approval_id < b.approval_id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1;

  return {
    async getThread(threadId) {
      return threads.get(threadId)?.row ?? null;
    },
    async createThread(row) {
      return createThread(row);
    },
    async claimThread(row, lease, start) {
      const { created, row: stored } = createThread(row);
      const handle = await lease.port.acquire(row.thread_id, lease.holder, lease.ttlMs);
      const started = created && handle !== null && start !== undefined;
      if (started) {
        runs.set(start.run.run_id, start.run);
        addRun(threads.get(row.thread_id), start.run.run_id);
        append(row.thread_id, start.messages, start.run.created_at);
      }
      return { created, row: stored, lease: handle, started };
    },
    async finishRun(runId, end, last, handle, port) {
      // In process the check and the writes run without a turn of the event loop between them.
      if (!(await port.renew(handle, 1_000))) throw new LeaseLost();
      append(handle.threadId, last.messages, last.at);
      const run = runs.get(runId);
      if (run) runs.set(runId, { ...run, ...end });
      await port.release(handle);
    },
    async threadBlockers(threadId) {
      const pending = [...approvals.values()].filter((a) => a.thread_id === threadId && a.status === "pending").sort(newestFirst);
      const ids = threads.get(threadId)?.runs ?? [];
      const due = ids.flatMap((id) => runs.get(id) ?? []).filter(isDue).sort((a, b) => (a.created_at < b.created_at ? -1 : 1))[0] ?? null;
      return { pending, due };
    },
    async dueRuns(limit) {
      return [...runs.values()].filter(isDue).sort((a, b) => (a.created_at < b.created_at ? -1 : 1)).slice(0, limit);
    },
    async markResumed(runId, by) {
      const run = runs.get(runId);
      if (!run || run.resumed_by !== null) return false;
      runs.set(runId, { ...run, resumed_by: by });
      return true;
    },
    async moveApproval(approvalId, runId, runTrace) {
      const a = approvals.get(approvalId);
      if (a && a.status === "pending") approvals.set(approvalId, { ...a, run_id: runId, ...(runTrace !== undefined ? { internal: { ...a.internal, run_trace: runTrace } } : {}) });
    },
    async findApproval(threadId, toolCallId, digest) {
      for (const a of approvals.values()) if (a.thread_id === threadId && a.internal.tool_call_id === toolCallId && a.digest === digest) return a;
      return null;
    },
    async markOutcomeUnknown(approvalId) {
      const a = approvals.get(approvalId);
      if (a && a.internal.result === null) approvals.set(approvalId, { ...a, outcome: "unknown" });
    },
    async markLostRuns() {
      return 0;
    },
    async listThreads(query: ListThreadsQuery) {
      const rows: ThreadRow[] = [];
      for (const { row } of threads.values()) {
        if (query.owner !== undefined && row.owner !== query.owner) continue;
        if (query.actor !== undefined && row.actor !== query.actor) continue;
        rows.push(row);
      }
      rows.sort((a, b) =>
        a.updated_at === b.updated_at
          ? a.thread_id < b.thread_id ? -1 : 1
          : a.updated_at < b.updated_at ? 1 : -1,
      );
      return rows.slice(query.offset, query.offset + query.limit);
    },
    async idleThreads(before, limit) {
      return [...threads.values()]
        .filter((e) => e.row.updated_at < before)
        .sort((a, b) => (a.row.updated_at < b.row.updated_at ? -1 : 1))
        .slice(0, limit)
        .map((e) => e.row.thread_id);
    },
    async deleteThread(threadId) {
      const entry = threads.get(threadId);
      if (!entry) return false;
      for (const runId of entry.runs) runs.delete(runId);
      for (const [id, a] of approvals) if (a.thread_id === threadId) approvals.delete(id);
      for (const [id, t] of tasks) if (t.context_id === threadId) tasks.delete(id);
      threads.delete(threadId);
      return true;
    },
    async getMessages(threadId) {
      return [...(threads.get(threadId)?.messages ?? [])];
    },
    async getMessagePage(threadId, page) {
      return pageOfMessages(threads.get(threadId)?.messages ?? [], page);
    },
    async appendMessages(threadId, messages, at) {
      append(threadId, messages, at);
    },
    async createRun(run: RunRecord, append) {
      runs.set(run.run_id, run);
      const entry = threads.get(run.thread_id);
      addRun(entry, run.run_id);
      if (entry && append) {
        entry.messages.push(...append.messages);
        entry.row = { ...entry.row, updated_at: append.at };
      }
    },
    async updateRun(runId, patch) {
      const run = runs.get(runId);
      if (run) runs.set(runId, { ...run, ...patch });
    },
    async getRun(runId) {
      return runs.get(runId) ?? null;
    },
    async listRuns(threadId) {
      const ids = threads.get(threadId)?.runs ?? [];
      return ids.flatMap((id) => runs.get(id) ?? []);
    },
    async createApproval(approval) {
      approvals.set(approval.approval_id, approval);
    },
    async getApproval(approvalId) {
      return approvals.get(approvalId) ?? null;
    },
    async listApprovals(query: ListApprovalsQuery) {
      const out: ApprovalRecord[] = [];
      for (const a of approvals.values()) {
        if (query.thread_id !== undefined && a.thread_id !== query.thread_id) continue;
        if (query.run_id !== undefined && a.run_id !== query.run_id) continue;
        if (query.status !== undefined && a.status !== query.status) continue;
        if (query.requester_actor !== undefined && a.requester_actor !== query.requester_actor) continue;
        const v = query.visibleTo;
        if (v && a.requester !== v.requester && !v.roles.some((r) => a.approvers.includes(`role:${r}`))) continue;
        out.push(a);
      }
      out.sort(newestFirst);
      return out.slice(query.offset, query.offset + query.limit);
    },
    async decideApproval(approvalId, d) {
      const a = approvals.get(approvalId);
      if (!a || a.status !== "pending") return null;
      const next = withDecision(a, d);
      approvals.set(approvalId, next);
      return next;
    },
    async claimApprovalExecution(approvalId, at) {
      const a = approvals.get(approvalId);
      if (!a || a.status !== "approved" || a.internal.executed_at !== null) return false;
      approvals.set(approvalId, { ...a, internal: { ...a.internal, executed_at: at } });
      return true;
    },
    async recordApprovalResult(approvalId, result) {
      const a = approvals.get(approvalId);
      // The exact call is no longer needed once sent: keep only its answer.
      if (a) approvals.set(approvalId, { ...a, outcome: "sent", internal: { ...a.internal, result, call: { query: [], body: undefined } } });
    },
    async dueApprovals(now) {
      return [...approvals.values()].filter((a) => a.status === "pending" && a.expires_at <= now);
    },
    // Stored task text holds U+FFFD in place of U+0000 (spec 2.5), as in PostgreSQL.
    async createTask(task) {
      tasks.set(task.task_id, hasNul(task) ? withoutNul(task) : task);
    },
    async getTask(taskId) {
      return tasks.get(taskId) ?? null;
    },
    async updateTask(taskId, patch) {
      const t = tasks.get(taskId);
      if (t) tasks.set(taskId, { ...t, ...(hasNul(patch) ? withoutNul(patch) : patch) });
    },
    async listTasks(q: ListTasksQuery) {
      return [...tasks.values()]
        .filter((t) => t.owner === q.owner && (q.actor === undefined || t.actor === q.actor) && (q.context_id === undefined || t.context_id === q.context_id))
        .sort((a, b) => (a.updated_at === b.updated_at ? (a.task_id < b.task_id ? 1 : -1) : a.updated_at < b.updated_at ? 1 : -1))
        .slice(q.offset, q.offset + q.limit);
    },
    async tasksWaitingOn(threadId, approvalId) {
      return [...tasks.values()].filter((t) => t.context_id === threadId && t.state === "input-required" && t.approval_ids.includes(approvalId));
    },
    async dropTasksBefore(before) {
      let n = 0;
      for (const [id, t] of tasks) if (t.updated_at < before) (tasks.delete(id), n++);
      return n;
    },
    async ping() {},
    async close() {},
  };
}

function addRun(entry: ThreadEntry | undefined, runId: string): void {
  if (entry && !entry.runs.includes(runId)) entry.runs.push(runId);
}
