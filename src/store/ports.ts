/**
 * Storage ports. Adapters (memory now, Postgres later) implement these; the core only sees the
 * types. Atomicity is part of the contract and is proven by the suites in test/contract/, run
 * against every adapter.
 */
import type { ApprovalDecision, ApprovalRecord, ListApprovalsQuery } from "./records/approval.js";
import type { JsonValue } from "../json.js";
import type { ListTasksQuery, TaskRecord } from "./records/task.js";

export interface ThreadRow {
  readonly thread_id: string;
  /** Hashed principal id of the subject that owns the thread. */
  readonly owner: string;
  /** Agent (actor id) that started the thread for the owner, or null for a direct thread. */
  readonly actor: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** Parsed arguments; `{}` when the model's text was not valid JSON. */
  readonly args: Record<string, JsonValue>;
}

export type Message =
  | { readonly id: string; readonly role: "user"; readonly content: string }
  | {
      readonly id: string;
      readonly role: "assistant";
      readonly content: string;
      readonly tool_calls?: readonly ToolCall[];
    }
  | {
      readonly id: string;
      readonly role: "tool";
      readonly content: string;
      readonly tool_call_id: string;
      readonly name: string;
      readonly is_error: boolean;
      readonly error_id?: string;
    };

export type RunStatus =
  | "running"
  | "ok"
  | "awaiting_approval"
  | "step_limit"
  | "error"
  | "timeout"
  | "cancelled"
  | "interrupted";

export interface RunRecord {
  readonly run_id: string;
  readonly thread_id: string;
  readonly status: RunStatus;
  /** Error class name for failed runs (`ModelError`, `ProcessLost`, ...), else null. */
  readonly error_type: string | null;
  readonly error_id: string | null;
  readonly principal_hash: string;
  readonly actor: string | null;
  /** The `/chat` metadata object; kept here only, never in messages. */
  readonly metadata: Readonly<Record<string, string | number | boolean | null>>;
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number };
  readonly created_at: string;
  readonly updated_at: string;
  readonly ended_at: string | null;
  readonly latency_ms: number | null;
  /** A run resumed after an approval names the paused run; the paused run names its resumer. */
  readonly resumed_from: string | null;
  readonly resumed_by: string | null;
}

/** What a run's record says once the run ended (finishRun). */
export type RunEnd = Pick<RunRecord, "status" | "error_type" | "error_id" | "usage" | "updated_at" | "ended_at" | "latency_ms">;

/** A run's record and first messages, written where the run's thread is claimed (claimThread). */
export interface RunStart {
  readonly run: RunRecord;
  readonly messages: readonly Message[];
}

export interface ListThreadsQuery {
  /** Only threads of this owner; undefined lists every owner (read-across). */
  readonly owner?: string;
  /** With owner: only threads this actor started (a delegated caller). */
  readonly actor?: string;
  readonly limit: number;
  readonly offset: number;
}

export interface Store {
  getThread(threadId: string): Promise<ThreadRow | null>;
  /**
   * Creates the thread unless it exists. Atomic: under concurrent calls with one id exactly one
   * caller gets `created: true`; every caller gets the row that is stored.
   */
  createThread(row: ThreadRow): Promise<{ created: boolean; row: ThreadRow }>;
  /** Most recently updated first, ties by id. */
  listThreads(query: ListThreadsQuery): Promise<ThreadRow[]>;
  /** Ids of threads not updated since `before` (ISO), oldest first, for retention. */
  idleThreads(before: string, limit: number): Promise<string[]>;
  /** Deletes the thread and everything attached (messages, run records, approvals, tasks). False if unknown. */
  deleteThread(threadId: string): Promise<boolean>;

  getMessages(threadId: string): Promise<Message[]>;
  /**
   * Appends in order and bumps the thread's `updated_at`. With `fence`, the write happens only
   * while that lease still holds the thread (adapters shared by replicas refuse it otherwise).
   */
  appendMessages(threadId: string, messages: readonly Message[], at: string, fence?: LeaseHandle): Promise<void>;

  /** Writes the run record; with `append`, also those messages (one write where the adapter can). */
  createRun(run: RunRecord, append?: { readonly messages: readonly Message[]; readonly at: string; readonly fence?: LeaseHandle }): Promise<void>;
  updateRun(runId: string, patch: Partial<Omit<RunRecord, "run_id" | "thread_id">>): Promise<void>;
  getRun(runId: string): Promise<RunRecord | null>;
  listRuns(threadId: string): Promise<RunRecord[]>;

  createApproval(approval: ApprovalRecord): Promise<void>;
  getApproval(approvalId: string): Promise<ApprovalRecord | null>;
  /** Newest first. */
  listApprovals(query: ListApprovalsQuery): Promise<ApprovalRecord[]>;
  /**
   * Records a decision only while the approval is pending. Atomic: under concurrent calls for one
   * approval exactly one caller gets the updated record, the others null.
   */
  decideApproval(approvalId: string, decision: ApprovalDecision): Promise<ApprovalRecord | null>;
  /** Marks an approved call as being sent. Atomic: exactly one caller ever gets true. */
  claimApprovalExecution(approvalId: string, at: string): Promise<boolean>;
  /** Keeps the answer of the sent call for replays; its outcome becomes `sent`. */
  recordApprovalResult(approvalId: string, result: NonNullable<ApprovalRecord["internal"]["result"]>): Promise<void>;
  /** Pending approvals whose `expires_at` is at or before `now` (ISO). */
  dueApprovals(now: string): Promise<ApprovalRecord[]>;

  createTask(task: TaskRecord): Promise<void>;
  getTask(taskId: string): Promise<TaskRecord | null>;
  updateTask(taskId: string, patch: Partial<Omit<TaskRecord, "task_id" | "context_id" | "owner" | "actor" | "created_at">>): Promise<void>;
  /** Most recently updated first. */
  listTasks(query: ListTasksQuery): Promise<TaskRecord[]>;
  /** Input-required tasks on a thread that list this approval. */
  tasksWaitingOn(threadId: string, approvalId: string): Promise<TaskRecord[]>;
  /** Drops tasks not updated since `before` (ISO); returns how many. */
  dropTasksBefore(before: string): Promise<number>;

  /**
   * createThread and taking the thread's lease (`lease`) in one step: one write where the adapter
   * holds leases in the same database (Postgres, which ignores `lease.port`: its leases are its
   * own), else the two in turn. The lease is taken whoever owns the thread; the caller releases
   * it when the thread turns out not to be the caller's. With `start`, the same write also
   * records the run and its first messages, but only when it created the thread and took its
   * lease (a thread made by this call is the caller's and has no history): `started` says so.
   */
  claimThread(row: ThreadRow, lease: LeaseClaim, start?: RunStart): Promise<Claimed>;

  /**
   * The run's last messages (fenced by the lease), its final record and the lease's release in
   * one step. Throws LeaseLost, writing nothing, when the lease no longer holds the thread.
   */
  finishRun(runId: string, end: RunEnd, append: { readonly messages: readonly Message[]; readonly at: string }, lease: LeaseHandle, port: ThreadLease): Promise<void>;

  /**
   * What stands before a new run on the thread, in one read: its pending approvals (newest
   * first) and the paused run that is due to resume (every approval decided, not yet resumed).
   */
  threadBlockers(threadId: string): Promise<{ pending: ApprovalRecord[]; due: RunRecord | null }>;

  /** Paused runs due to resume (every approval decided, none resumed), oldest first. */
  dueRuns(limit: number): Promise<RunRecord[]>;

  /**
   * Marks a paused run resumed by `by`, only while no run resumed it. Atomic: exactly one caller
   * gets true.
   */
  markResumed(runId: string, by: string): Promise<boolean>;

  /** The approval a tool call asked for with this digest (the same call made again), or null. */
  findApproval(threadId: string, toolCallId: string, digest: string): Promise<ApprovalRecord | null>;

  /** Records that an approved call's sending was cut off before its answer came (outcome unknown). */
  markOutcomeUnknown(approvalId: string): Promise<void>;

  /**
   * Adapters shared by several processes: marks `running` records of dead processes
   * `interrupted` (ProcessLost) once their lease has been expired for `graceMs`. In-process
   * adapters have no other process to outlive: 0.
   */
  markLostRuns(graceMs: number): Promise<number>;

  /** Resolves when the store answers; throws when it cannot (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Who takes a thread's lease in claimThread, for how long, and through which lease port. */
export interface LeaseClaim {
  readonly port: ThreadLease;
  readonly holder: string;
  readonly ttlMs: number;
}

export interface Claimed {
  readonly created: boolean;
  readonly row: ThreadRow;
  /** Null when another holder has the thread. */
  readonly lease: LeaseHandle | null;
  /** The run record and first messages were written with the claim. */
  readonly started: boolean;
}

export interface LeaseHandle {
  readonly threadId: string;
  readonly holder: string;
  /** Grows each time the thread is leased; writes may be fenced on it. */
  readonly generation: number;
}

/** One run per thread. */
export interface ThreadLease {
  /**
   * Takes the thread for `ttlMs` unless another holder has an unexpired lease. Atomic: under
   * concurrent calls for one thread exactly one caller gets a handle, the others null.
   */
  acquire(threadId: string, holder: string, ttlMs: number): Promise<LeaseHandle | null>;
  /** Extends a lease still held by this handle; false once it was lost (expired and taken). */
  renew(handle: LeaseHandle, ttlMs: number): Promise<boolean>;
  /** Frees the thread if this handle still holds it. */
  release(handle: LeaseHandle): Promise<void>;
  /** True while an unexpired lease is held on the thread. */
  isHeld(threadId: string): Promise<boolean>;
}
