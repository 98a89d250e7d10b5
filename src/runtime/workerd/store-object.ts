/**
 * The store Durable Object (binding AGENT_STORE, class AgentStoreObject): threads, messages,
 * runs, approvals and tasks in its SQLite storage (src/store/durable/tables.ts). Each RPC method
 * is one synchronous call into the tables, so it runs whole before the object takes the next
 * event: the atomicity the Store port asks for. One object serves every isolate; its throughput
 * (one thread of execution) is the ceiling of this storage, and PostgreSQL the way past it.
 */
import { DurableObject, type DurableObjectState } from "cloudflare:workers";
import type { ApprovalDecision, ApprovalRecord, ListApprovalsQuery } from "../../store/records/approval.js";
import type { ListTasksQuery, TaskRecord } from "../../store/records/task.js";
import type { ListThreadsQuery, Message, MessagePage, RunEnd, RunRecord, RunStart, TaskCursor, ThreadRow } from "../../store/ports.js";
import { type FencedWrite, sqliteTables, type SqliteTables } from "../../store/durable/tables.js";
import type { StoreObjectApi } from "../../store/durable/objects.js";

type Sync<T> = { [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never };

export class AgentStoreObject extends DurableObject implements Sync<StoreObjectApi> {
  readonly #tables: SqliteTables;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    const { sql } = ctx.storage;
    this.#tables = sqliteTables({
      exec: (query, ...bindings) => sql.exec(query, ...bindings) as never,
      transaction: (work) => ctx.storage.transactionSync(work),
    });
  }

  ping(): void {}

  getThread(id: string) { return this.#tables.getThread(id); }
  createThread(row: ThreadRow) { return this.#tables.createThread(row); }
  listThreads(q: ListThreadsQuery) { return this.#tables.listThreads(q); }
  idleThreads(before: string, limit: number) { return this.#tables.idleThreads(before, limit); }
  deleteThread(id: string) { return this.#tables.deleteThread(id); }
  getMessages(id: string) { return this.#tables.getMessages(id); }
  getMessagePage(id: string, page: MessagePage) { return this.#tables.getMessagePage(id, page); }
  appendMessages(id: string, messages: readonly Message[], at: string) { this.#tables.appendMessages(id, messages, at); }

  createRun(run: RunRecord, append?: { readonly messages: readonly Message[]; readonly at: string }) { this.#tables.createRun(run, append); }
  updateRun(id: string, patch: Partial<RunRecord>) { this.#tables.updateRun(id, patch); }
  getRun(id: string) { return this.#tables.getRun(id); }
  listRuns(threadId: string) { return this.#tables.listRuns(threadId); }
  claim(row: ThreadRow, start: RunStart | null) { return this.#tables.claim(row, start); }
  finish(runId: string, end: RunEnd, threadId: string, messages: readonly Message[], at: string) { this.#tables.finish(runId, end, threadId, messages, at); }
  write(w: FencedWrite) { this.#tables.write(w); }
  threadBlockers(threadId: string) { return this.#tables.threadBlockers(threadId); }
  dueRuns(limit: number) { return this.#tables.dueRuns(limit); }
  markResumed(id: string, by: string) { return this.#tables.markResumed(id, by); }
  runningBefore(before: string) { return this.#tables.runningBefore(before); }
  markLost(runIds: readonly string[], at: string) { return this.#tables.markLost(runIds, at); }

  createApproval(a: ApprovalRecord) { this.#tables.createApproval(a); }
  getApproval(id: string) { return this.#tables.getApproval(id); }
  listApprovals(q: ListApprovalsQuery) { return this.#tables.listApprovals(q); }
  decideApproval(id: string, d: ApprovalDecision) { return this.#tables.decideApproval(id, d); }
  claimApprovalExecution(id: string, at: string) { return this.#tables.claimApprovalExecution(id, at); }
  recordApprovalResult(id: string, result: NonNullable<ApprovalRecord["internal"]["result"]>) { this.#tables.recordApprovalResult(id, result); }
  dueApprovals(now: string) { return this.#tables.dueApprovals(now); }
  findApproval(threadId: string, toolCallId: string, digest: string) { return this.#tables.findApproval(threadId, toolCallId, digest); }
  moveApproval(id: string, runId: string, runTrace?: string) { this.#tables.moveApproval(id, runId, runTrace); }
  markOutcomeUnknown(id: string) { this.#tables.markOutcomeUnknown(id); }

  createTask(t: TaskRecord) { this.#tables.createTask(t); }
  getTask(id: string) { return this.#tables.getTask(id); }
  updateTask(id: string, patch: Parameters<SqliteTables["updateTask"]>[1], ifUpdatedAt?: string) { return this.#tables.updateTask(id, patch, ifUpdatedAt); }
  listTasks(q: ListTasksQuery) { return this.#tables.listTasks(q); }
  tasksWaitingOn(threadId: string, approvalId: string) { return this.#tables.tasksWaitingOn(threadId, approvalId); }
  strandedTasks(before: string, limit: number, after?: TaskCursor) { return this.#tables.strandedTasks(before, limit, after); }
  dropTasksBefore(before: string) { return this.#tables.dropTasksBefore(before); }
}
