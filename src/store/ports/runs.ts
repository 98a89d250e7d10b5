/**
 * The runs table, and the three operations that span tables: claimThread, finishRun and
 * threadBlockers. They live here because each is a step of a run's life (its start, its end,
 * what stands before it) and the run record is what each writes or looks for; the thread, lease,
 * message and approval rows they touch are that run's. Adapters keep them beside the run
 * insert and the fenced writes they share (postgres/runs.ts).
 */
import type { ApprovalRecord } from "../records/approval.js";
import type { LeaseClaim, LeaseHandle, ThreadLease } from "./lease.js";
import type { Message, ThreadRow } from "./threads.js";

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

export interface Claimed {
  readonly created: boolean;
  readonly row: ThreadRow;
  /** Null when another holder has the thread. */
  readonly lease: LeaseHandle | null;
  /** The run record and first messages were written with the claim. */
  readonly started: boolean;
}

export interface RunStore {
  /** Writes the run record; with `append`, also those messages (one write where the adapter can). */
  createRun(run: RunRecord, append?: { readonly messages: readonly Message[]; readonly at: string; readonly fence?: LeaseHandle }): Promise<void>;
  updateRun(runId: string, patch: Partial<Omit<RunRecord, "run_id" | "thread_id">>): Promise<void>;
  getRun(runId: string): Promise<RunRecord | null>;
  listRuns(threadId: string): Promise<RunRecord[]>;

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
   * first) and the paused run that is due to resume (at least one of its approvals decided, not
   * yet resumed: each decision resumes the run, which pauses again for the calls still pending).
   */
  threadBlockers(threadId: string): Promise<{ pending: ApprovalRecord[]; due: RunRecord | null }>;

  /** Paused runs due to resume (at least one approval decided, not yet resumed), oldest first. */
  dueRuns(limit: number): Promise<RunRecord[]>;

  /**
   * Marks a paused run resumed by `by`, only while no run resumed it. Atomic: exactly one caller
   * gets true.
   */
  markResumed(runId: string, by: string): Promise<boolean>;

  /**
   * Adapters shared by several processes: marks `running` records of dead processes
   * `interrupted` (ProcessLost) once their lease has been expired for `graceMs`. In-process
   * adapters have no other process to outlive: 0.
   */
  markLostRuns(graceMs: number): Promise<number>;
}
