/** The approvals table in SQLite (synchronous: see ./sql.ts); the memory store is the reference. */
import type { ApprovalDecision, ApprovalRecord, ListApprovalsQuery } from "../records/approval.js";
import { withDecision } from "../records/decision.js";
import { givenFilters, parsed, type Sqlite, type SqlValue, type Statement } from "./sql.js";

const NEWEST_FIRST = "ORDER BY created_at DESC, approval_id DESC";

/**
 * A list of approvals: only the filters given, so that a thread's or a run's approvals are read
 * through their index (approvals_by_thread, approvals_by_run), and what a caller who may not read
 * across may see: its own requests and, with roles, those its roles approve.
 */
export function approvalListQuery(q: ListApprovalsQuery): Statement {
  const where = givenFilters([
    ["thread_id = ?", q.thread_id],
    ["run_id = ?", q.run_id],
    ["status = ?", q.status],
    ["requester_actor = ?", q.requester_actor],
  ]);
  const v = q.visibleTo;
  let visible = "";
  const bindings = where.bindings;
  if (v && v.roles.length === 0) {
    visible = " AND requester = ?";
    bindings.push(v.requester);
  } else if (v) {
    visible = " AND (requester = ? OR EXISTS (SELECT 1 FROM json_each(approvals.approvers) AS j WHERE j.value IN (SELECT value FROM json_each(?))))";
    bindings.push(v.requester, JSON.stringify(v.roles.map((r) => `role:${r}`)));
  }
  return { sql: `SELECT body FROM approvals WHERE ${where.sql}${visible} ${NEWEST_FIRST} LIMIT ? OFFSET ?`, bindings: [...bindings, q.limit, q.offset] };
}

export function approvalTables(db: Sqlite) {
  const put = (a: ApprovalRecord) =>
    db.exec(
      `INSERT INTO approvals (approval_id, thread_id, run_id, status, requester, requester_actor, approvers, tool_call_id, digest, created_at, expires_at, body)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (approval_id) DO UPDATE SET thread_id = excluded.thread_id, run_id = excluded.run_id, status = excluded.status,
         requester = excluded.requester, requester_actor = excluded.requester_actor, approvers = excluded.approvers,
         tool_call_id = excluded.tool_call_id, digest = excluded.digest, created_at = excluded.created_at,
         expires_at = excluded.expires_at, body = excluded.body`,
      a.approval_id, a.thread_id, a.run_id, a.status, a.requester, a.requester_actor, JSON.stringify(a.approvers),
      a.internal.tool_call_id, a.digest, a.created_at, a.expires_at, JSON.stringify(a),
    );
  const select = (where: string, ...bindings: SqlValue[]): ApprovalRecord[] =>
    db.exec<{ body: string }>(`SELECT body FROM approvals WHERE ${where}`, ...bindings).toArray().map((r) => parsed<ApprovalRecord>(r.body));
  const getApproval = (approvalId: string): ApprovalRecord | null => select("approval_id = ?", approvalId)[0] ?? null;

  return {
    createApproval(a: ApprovalRecord): void {
      put(a);
    },
    getApproval,

    listApprovals(q: ListApprovalsQuery): ApprovalRecord[] {
      const { sql, bindings } = approvalListQuery(q);
      return db.exec<{ body: string }>(sql, ...bindings).toArray().map((r) => parsed<ApprovalRecord>(r.body));
    },

    /** Only while pending: a single synchronous read and write, so exactly one concurrent caller wins. */
    decideApproval(approvalId: string, d: ApprovalDecision): ApprovalRecord | null {
      const a = getApproval(approvalId);
      if (!a || a.status !== "pending") return null;
      const next = withDecision(a, d);
      put(next);
      return next;
    },

    claimApprovalExecution(approvalId: string, at: string): boolean {
      const a = getApproval(approvalId);
      if (!a || a.status !== "approved" || a.internal.executed_at !== null) return false;
      put({ ...a, internal: { ...a.internal, executed_at: at } });
      return true;
    },

    recordApprovalResult(approvalId: string, result: NonNullable<ApprovalRecord["internal"]["result"]>): void {
      const a = getApproval(approvalId);
      // The exact call is no longer needed once sent: keep only its answer.
      if (a) put({ ...a, outcome: "sent", internal: { ...a.internal, result, call: { query: [], body: undefined } } });
    },

    dueApprovals(now: string): ApprovalRecord[] {
      return select("status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT 500", now);
    },

    findApproval(threadId: string, toolCallId: string, digest: string): ApprovalRecord | null {
      return select("thread_id = ? AND tool_call_id = ? AND digest = ? LIMIT 1", threadId, toolCallId, digest)[0] ?? null;
    },

    /** `runTrace`, when given, replaces the internal part's run_trace (the span of the run that waits now). */
    moveApproval(approvalId: string, runId: string, runTrace?: string): void {
      const a = getApproval(approvalId);
      if (a && a.status === "pending") put({ ...a, run_id: runId, ...(runTrace !== undefined ? { internal: { ...a.internal, run_trace: runTrace } } : {}) });
    },

    markOutcomeUnknown(approvalId: string): void {
      const a = getApproval(approvalId);
      if (a && a.internal.result === null) put({ ...a, outcome: "unknown" });
    },

    /** The thread's pending approvals, newest first (threadBlockers' first half). */
    pendingOn(threadId: string): ApprovalRecord[] {
      return select(`thread_id = ? AND status = 'pending' ${NEWEST_FIRST}`, threadId);
    },
  };
}
