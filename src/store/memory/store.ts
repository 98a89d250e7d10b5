/** In-process Store: the default adapter and the reference the contract suite holds others to. */
import { FINISHED, type ListTasksQuery, type TaskRecord } from "../records/task.js";
import type { ApprovalRecord, ListApprovalsQuery } from "../records/approval.js";
import { withDecision } from "../records/decision.js";
import { pageOfMessages } from "../records/messages.js";
import { firstInOrder, firstInOrderFromEnd } from "./first.js";
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
  // Indexes, so that what a message or a sweep reads does not grow with every run and approval
  // ever kept: scanning them held the event loop 44-48 ms a sweep (every 5 s) with a million runs
  // kept, and 1-10 ms a message with ten thousand approvals (scripts/bench-store.mjs).
  /** Runs paused and not resumed yet: the only ones that can be due. */
  const paused = new Set<string>();
  /** Approval ids by thread and by run, and the pending ones. */
  const approvalsByThread = new Map<string, Set<string>>();
  const approvalsByRun = new Map<string, Set<string>>();
  const pendingApprovals = new Set<string>();
  /**
   * Task ids by thread (context), and those not finished: the settling sweep (every 30 s) and each
   * decision read only these, not every task ever kept.
   */
  const tasksByThread = new Map<string, Set<string>>();
  const openTasks = new Set<string>();

  /** Every write of a run goes through here (the paused index follows it). */
  const putRun = (run: RunRecord) => {
    runs.set(run.run_id, run);
    if (run.status === "awaiting_approval" && run.resumed_by === null) paused.add(run.run_id);
    else paused.delete(run.run_id);
  };
  /** Every write of an approval goes through here (the indexes follow it). */
  const putApproval = (a: ApprovalRecord) => {
    const id = a.approval_id;
    const before = approvals.get(id);
    approvals.set(id, a);
    // An id keeps its place in an index it stays in: the orders read from them are insertion orders.
    if (before?.thread_id !== a.thread_id) {
      if (before) unindex(approvalsByThread, before.thread_id, id);
      indexed(approvalsByThread, a.thread_id).add(id);
    }
    if (before?.run_id !== a.run_id) {
      if (before) unindex(approvalsByRun, before.run_id, id);
      indexed(approvalsByRun, a.run_id).add(id);
    }
    if (a.status === "pending") pendingApprovals.add(id);
    else pendingApprovals.delete(id);
  };
  /** Every write of a task goes through here (the indexes follow it). */
  const putTask = (t: TaskRecord) => {
    const before = tasks.get(t.task_id);
    tasks.set(t.task_id, t);
    if (before?.context_id !== t.context_id) {
      if (before) unindex(tasksByThread, before.context_id, t.task_id);
      indexed(tasksByThread, t.context_id).add(t.task_id);
    }
    if (FINISHED.has(t.state)) openTasks.delete(t.task_id);
    else openTasks.add(t.task_id);
  };
  const dropTask = (t: TaskRecord) => {
    tasks.delete(t.task_id);
    unindex(tasksByThread, t.context_id, t.task_id);
    openTasks.delete(t.task_id);
  };
  /** The tasks whose ids `ids` holds (an index's: each id is a kept task's). */
  const tasksOf = (ids: Iterable<string> | undefined): TaskRecord[] => {
    const out: TaskRecord[] = [];
    for (const id of ids ?? []) out.push(tasks.get(id)!);
    return out;
  };
  const unindexApproval = (a: ApprovalRecord) => {
    unindex(approvalsByThread, a.thread_id, a.approval_id);
    unindex(approvalsByRun, a.run_id, a.approval_id);
    pendingApprovals.delete(a.approval_id);
  };
  const approvalsIn = (index: Map<string, Set<string>>, key: string): ApprovalRecord[] => {
    const out: ApprovalRecord[] = [];
    for (const id of index.get(key) ?? []) out.push(approvals.get(id)!);
    return out;
  };

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
  const approvalsOfRun = (runId: string) => approvalsIn(approvalsByRun, runId);
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
        putRun(start.run);
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
      if (run) putRun({ ...run, ...end });
      await port.release(handle);
    },
    async threadBlockers(threadId) {
      const pending = approvalsIn(approvalsByThread, threadId).filter((a) => a.status === "pending").sort(newestFirst);
      const ids = threads.get(threadId)?.runs ?? [];
      const due = ids.flatMap((id) => runs.get(id) ?? []).filter(isDue).sort((a, b) => (a.created_at < b.created_at ? -1 : 1))[0] ?? null;
      return { pending, due };
    },
    async dueRuns(limit) {
      const due: RunRecord[] = [];
      for (const id of paused) {
        const run = runs.get(id)!;
        if (isDue(run)) due.push(run);
      }
      return due.sort(oldestFirst).slice(0, limit);
    },
    async markResumed(runId, by) {
      const run = runs.get(runId);
      if (!run || run.resumed_by !== null) return false;
      putRun({ ...run, resumed_by: by });
      return true;
    },
    async moveApproval(approvalId, runId, runTrace) {
      const a = approvals.get(approvalId);
      if (a && a.status === "pending") putApproval({ ...a, run_id: runId, ...(runTrace !== undefined ? { internal: { ...a.internal, run_trace: runTrace } } : {}) });
    },
    async findApproval(threadId, toolCallId, digest) {
      for (const a of approvalsIn(approvalsByThread, threadId)) if (a.internal.tool_call_id === toolCallId && a.digest === digest) return a;
      return null;
    },
    async markOutcomeUnknown(approvalId) {
      const a = approvals.get(approvalId);
      if (a && a.internal.result === null) putApproval({ ...a, outcome: "unknown" });
    },
    async markLostRuns() {
      return 0;
    },
    async listThreads(query: ListThreadsQuery) {
      const { owner, actor } = query;
      const first = firstInOrderFromEnd([...threads.values()], query.offset + query.limit, (a, b) => newestThreadFirst(a.row, b.row), ({ row }) =>
        (owner === undefined || row.owner === owner) && (actor === undefined || row.actor === actor));
      return first.slice(query.offset).map((e) => e.row);
    },
    async idleThreads(before, limit) {
      return firstInOrder(threads.values(), limit, (a, b) => oldestThreadFirst(a.row, b.row), (e) => e.row.updated_at < before).map((e) => e.row.thread_id);
    },
    async deleteThread(threadId) {
      const entry = threads.get(threadId);
      if (!entry) return false;
      for (const runId of entry.runs) {
        runs.delete(runId);
        paused.delete(runId);
      }
      for (const a of approvalsIn(approvalsByThread, threadId)) {
        unindexApproval(a);
        approvals.delete(a.approval_id);
      }
      for (const t of tasksOf(tasksByThread.get(threadId))) dropTask(t);
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
      putRun(run);
      const entry = threads.get(run.thread_id);
      addRun(entry, run.run_id);
      if (entry && append) {
        entry.messages.push(...append.messages);
        entry.row = { ...entry.row, updated_at: append.at };
      }
    },
    async updateRun(runId, patch) {
      const run = runs.get(runId);
      if (run) putRun({ ...run, ...patch });
    },
    async getRun(runId) {
      return runs.get(runId) ?? null;
    },
    async listRuns(threadId) {
      const ids = threads.get(threadId)?.runs ?? [];
      return ids.flatMap((id) => runs.get(id) ?? []);
    },
    async createApproval(approval) {
      putApproval(approval);
    },
    async getApproval(approvalId) {
      return approvals.get(approvalId) ?? null;
    },
    async listApprovals(query: ListApprovalsQuery) {
      // The narrowest index the query allows; every filter still applies, and the order is set
      // by keeping the page's records in a bounded heap (first.ts), read from the newest made.
      const from =
        query.thread_id !== undefined
          ? approvalsIn(approvalsByThread, query.thread_id)
          : query.run_id !== undefined
            ? approvalsIn(approvalsByRun, query.run_id)
            : query.status === "pending"
              ? [...pendingApprovals].map((id) => approvals.get(id)!)
              : [...approvals.values()];
      const v = query.visibleTo;
      const kept = (a: ApprovalRecord) =>
        (query.thread_id === undefined || a.thread_id === query.thread_id) &&
        (query.run_id === undefined || a.run_id === query.run_id) &&
        (query.status === undefined || a.status === query.status) &&
        (query.requester_actor === undefined || a.requester_actor === query.requester_actor) &&
        (!v || a.requester === v.requester || v.roles.some((r) => a.approvers.includes(`role:${r}`)));
      return firstInOrderFromEnd(from, query.offset + query.limit, newestFirst, kept).slice(query.offset);
    },
    async decideApproval(approvalId, d) {
      const a = approvals.get(approvalId);
      if (!a || a.status !== "pending") return null;
      const next = withDecision(a, d);
      putApproval(next);
      return next;
    },
    async claimApprovalExecution(approvalId, at) {
      const a = approvals.get(approvalId);
      if (!a || a.status !== "approved" || a.internal.executed_at !== null) return false;
      putApproval({ ...a, internal: { ...a.internal, executed_at: at } });
      return true;
    },
    async recordApprovalResult(approvalId, result) {
      const a = approvals.get(approvalId);
      // The exact call is no longer needed once sent: keep only its answer.
      if (a) putApproval({ ...a, outcome: "sent", internal: { ...a.internal, result, call: { query: [], body: undefined } } });
    },
    async dueApprovals(now) {
      const due: ApprovalRecord[] = [];
      for (const id of pendingApprovals) {
        const a = approvals.get(id)!;
        if (a.expires_at <= now) due.push(a);
      }
      return due;
    },
    // Stored task text holds U+FFFD in place of U+0000 (spec 2.5), as in PostgreSQL.
    async createTask(task) {
      putTask(hasNul(task) ? withoutNul(task) : task);
    },
    async getTask(taskId) {
      return tasks.get(taskId) ?? null;
    },
    async updateTask(taskId, patch, ifUpdatedAt) {
      const t = tasks.get(taskId);
      if (!t || FINISHED.has(t.state) || (ifUpdatedAt !== undefined && Date.parse(t.updated_at) !== Date.parse(ifUpdatedAt))) return false;
      putTask({ ...t, ...(hasNul(patch) ? withoutNul(patch) : patch) });
      return true;
    },
    async listTasks(q: ListTasksQuery) {
      const from = q.context_id === undefined ? [...tasks.values()] : tasksOf(tasksByThread.get(q.context_id));
      const mine = (t: TaskRecord) => t.owner === q.owner && (q.actor === undefined || t.actor === q.actor) && (q.context_id === undefined || t.context_id === q.context_id);
      return firstInOrderFromEnd(from, q.offset + q.limit, newestTaskFirst, mine).slice(q.offset);
    },
    async tasksWaitingOn(threadId, approvalId) {
      return tasksOf(tasksByThread.get(threadId)).filter((t) => waitsForDecision(t) && t.approval_ids.includes(approvalId));
    },
    async strandedTasks(before, limit, after) {
      const pending = (id: string) => approvals.get(id)?.status === "pending";
      const runEnded = (id: string | null) => id !== null && runs.has(id) && runs.get(id)!.status !== "running";
      const overdue = (t: TaskRecord) =>
        (waitsForDecision(t) && t.approval_ids.length > 0 && !t.approval_ids.some(pending)) || (t.state === "working" && runEnded(t.run_id));
      // Only a task not finished can be stranded.
      return tasksOf(openTasks)
        .filter((t) => t.updated_at < before && overdue(t) && (!after || t.updated_at > after.updated_at || (t.updated_at === after.updated_at && t.task_id > after.task_id)))
        .sort((a, b) => (a.updated_at === b.updated_at ? (a.task_id < b.task_id ? -1 : 1) : a.updated_at < b.updated_at ? -1 : 1))
        .slice(0, limit);
    },
    async dropTasksBefore(before) {
      let n = 0;
      for (const t of tasks.values()) if (t.updated_at < before) (dropTask(t), n++);
      return n;
    },
    async ping() {},
    async close() {},
  };
}

/** Last written first, then by id (GET /threads, as the SQL adapters order it). */
function newestThreadFirst(a: ThreadRow, b: ThreadRow): number {
  if (a.updated_at !== b.updated_at) return a.updated_at < b.updated_at ? 1 : -1;
  return a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0;
}

/** Idle longest first (the retention sweep), then by id. */
function oldestThreadFirst(a: ThreadRow, b: ThreadRow): number {
  if (a.updated_at !== b.updated_at) return a.updated_at < b.updated_at ? -1 : 1;
  return a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0;
}

/** Last written first, then the later id first (ListTasks). */
function newestTaskFirst(a: TaskRecord, b: TaskRecord): number {
  if (a.updated_at !== b.updated_at) return a.updated_at < b.updated_at ? 1 : -1;
  return a.task_id < b.task_id ? 1 : a.task_id > b.task_id ? -1 : 0;
}

/** By creation, then id (as the SQL adapters order them). */
function oldestFirst(a: RunRecord, b: RunRecord): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? -1 : 1;
  return a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0;
}

function indexed(index: Map<string, Set<string>>, key: string): Set<string> {
  let ids = index.get(key);
  if (!ids) index.set(key, (ids = new Set()));
  return ids;
}

function unindex(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids?.delete(id) && ids.size === 0) index.delete(key);
}

function addRun(entry: ThreadEntry | undefined, runId: string): void {
  if (entry && !entry.runs.includes(runId)) entry.runs.push(runId);
}

/** A task that takes the outcome of a decision's run: asking for one, or queued on one (no run carries it). */
function waitsForDecision(t: TaskRecord): boolean {
  return t.state === "input-required" || (t.state === "working" && t.run_id === null);
}
