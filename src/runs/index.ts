/**
 * The run layer: the only place that starts, pauses, resumes, expires, recovers and drains runs,
 * and the only place that takes a thread's lease. Routes and the A2A layer use this service.
 */
import { type DecisionRequest, expireIfDue, recordDecision } from "../approvals/decide.js";
import type { ApprovalRecord } from "../approvals/types.js";
import type { Caller } from "../auth/caller.js";
import type { RunEvent } from "../agent/events.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { ThreadRow } from "../store/ports.js";
import type { RunsContext } from "./context.js";
import type { RunHandle } from "./execute.js";
import { withThreadLease } from "./leases.js";
import { sweep } from "./recover.js";
import { createResumer, type ResumeListener, type ResumeOutcome } from "./resume.js";
import { sweepRetention } from "./retention.js";
import { startTurn, type TurnInput } from "./turn.js";

export type { AgentSetup, RunLimits, RunsContext } from "./context.js";
export type { RunHandle } from "./execute.js";
export { LEASE_TIMINGS, type LeaseTimings, threadLeases } from "./leases.js";
export { createRunRegistry } from "./registry.js";
export type { ResumeOutcome } from "./resume.js";
export { THREAD_FOREIGN, threadBusy } from "./turn.js";

/**
 * How long a decider waits for the thread before leaving the resume to its next holder: the
 * paused run may still be writing its end, or a chat that took the thread is about to resume it.
 */
const DECISION_WAIT_MS = 2_000;

export interface Runs {
  /** A run for one message on a thread (claimed or created for the caller). */
  startTurn(input: TurnInput): Promise<RunHandle>;
  /**
   * Records a decision (refusals thrown with their codes) and, when it was the run's last, resumes
   * the paused run streaming to `stream`.
   */
  decide(
    caller: Caller,
    thread: ThreadRow,
    approvalId: string,
    request: DecisionRequest,
    stream: { readonly emit: (event: RunEvent) => void; readonly logger: Logger; readonly span?: TraceSpan | undefined },
  ): Promise<{ readonly decided: ApprovalRecord; readonly resume: ResumeOutcome }>;
  /** The two halves of `decide`, for callers that answer in between (A2A tasks). */
  recordDecision(caller: Caller, thread: ThreadRow, approvalId: string, request: DecisionRequest, logger?: Logger): Promise<ApprovalRecord>;
  resumeAfterDecision(
    decided: ApprovalRecord,
    stream: { readonly emit: (event: RunEvent) => void; readonly logger: Logger; readonly decider: Caller; readonly span?: TraceSpan | undefined },
  ): Promise<ResumeOutcome>;
  /** The approval as it stands, expired first if its time has passed (logged with the request's logger). */
  expireIfDue(approval: ApprovalRecord, logger: Logger): Promise<ApprovalRecord>;
  /** Deletes the thread under its lease: false while a run holds it. */
  deleteThread(threadId: string): Promise<boolean>;
  /** Expires due approvals and resumes decided runs nobody resumed (every replica, on a timer). */
  recover(): Promise<{ expired: number; resumed: number }>;
  /** Deletes threads idle more than `days` days. */
  retention(days: number): Promise<number>;
  onResumed(listener: ResumeListener): void;
  /** Runs in progress in this process. */
  readonly active: number;
  /** Lets runs finish for up to `graceMs`, then interrupts the rest. */
  drain(graceMs: number): Promise<void>;
}

export function createRuns(ctx: RunsContext): Runs {
  const resumer = createResumer(ctx);
  return {
    startTurn: (input) => startTurn(ctx, resumer, input),
    async decide(caller, thread, approvalId, request, stream) {
      const decided = await recordDecision(ctx.decisions, caller, thread, approvalId, request, stream.logger);
      const resume = await resumer.afterDecision(decided, { ...stream, decider: caller }, DECISION_WAIT_MS);
      return { decided, resume };
    },
    recordDecision: (caller, thread, approvalId, request, logger) => recordDecision(ctx.decisions, caller, thread, approvalId, request, logger),
    resumeAfterDecision: (decided, stream) => resumer.afterDecision(decided, stream, DECISION_WAIT_MS),
    expireIfDue: (approval, logger) => expireIfDue(ctx.decisions, approval, logger),
    async deleteThread(threadId) {
      // Holding the lease while deleting keeps a run from starting on a half-deleted thread.
      return (await withThreadLease(ctx.leases, threadId, "delete", () => ctx.store.deleteThread(threadId))) !== "busy";
    },
    recover: () => sweep(ctx, resumer),
    retention: (days) => sweepRetention(ctx, days),
    onResumed: (listener) => resumer.onResumed(listener),
    get active() {
      return ctx.registry.size;
    },
    drain: (graceMs) => ctx.registry.drain(graceMs),
  };
}
