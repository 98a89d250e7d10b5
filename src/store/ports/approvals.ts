/** The approvals table (records in ../records/approval.ts). */
import type { ApprovalDecision, ApprovalRecord, ListApprovalsQuery } from "../records/approval.js";

export interface ApprovalStore {
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

  /** The approval a tool call asked for with this digest (the same call made again), or null. */
  findApproval(threadId: string, toolCallId: string, digest: string): Promise<ApprovalRecord | null>;

  /**
   * A pending approval now waited on by another run: a run resumed after a decision on one call of
   * its turn pauses again for the calls still pending, which move to it (only while pending).
   * `runTrace`, when given, replaces the internal part's `run_trace` (the span of the run that
   * waits now).
   */
  moveApproval(approvalId: string, runId: string, runTrace?: string): Promise<void>;

  /** Records that an approved call's sending was cut off before its answer came (outcome unknown). */
  markOutcomeUnknown(approvalId: string): Promise<void>;
}
