/**
 * Storage ports, one per table (./ports/*.ts), and `Store`, the one adapter that implements them
 * all. Adapters (memory, Postgres) implement these; the core only sees the types and imports
 * them from here. Atomicity is part of the contract and is proven by the suites in
 * test/contract/, run against every adapter. The operations that span tables (claimThread,
 * finishRun, threadBlockers) are steps of a run's life and sit on RunStore (./ports/runs.ts).
 */
import type { ApprovalStore } from "./ports/approvals.js";
import type { RunStore } from "./ports/runs.js";
import type { TaskStore } from "./ports/tasks.js";
import type { ThreadStore } from "./ports/threads.js";

export type { ApprovalStore } from "./ports/approvals.js";
export type { LeaseClaim, LeaseHandle, ThreadLease } from "./ports/lease.js";
export type { Claimed, RunEnd, RunRecord, RunStart, RunStatus, RunStore } from "./ports/runs.js";
export type { TaskCursor, TaskStore } from "./ports/tasks.js";
export type { ListThreadsQuery, Message, MessagePage, ThreadRow, ThreadStore, ToolCall } from "./ports/threads.js";

/** Every table's port in one adapter (one database, one connection pool). */
export interface Store extends ThreadStore, RunStore, ApprovalStore, TaskStore {
  /** Resolves when the store answers; throws when it cannot (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
