/** The approvals table on PostgreSQL: the record's shown part and its internal part as jsonb. */
import type { ApprovalDecision, ListApprovalsQuery } from "../records/approval.js";
import type { ApprovalStore } from "../ports.js";
import type { Sql } from "./connect.js";
import type { Guard } from "./health.js";
import { approvalOf, jsonb, withoutNul } from "./rows.js";

export function createApprovalStore(sql: Sql, guard: Guard): ApprovalStore {
  const json = jsonb(sql);
  return {
    createApproval: (a) => guard(async () => {
      const { internal, ...shown } = a;
      await sql`
        INSERT INTO approvals (approval_id, thread_id, run_id, status, requester, requester_actor, approvers, created_at, expires_at, shown, internal)
        VALUES (${a.approval_id}, ${a.thread_id}, ${a.run_id}, ${a.status}, ${a.requester}, ${a.requester_actor},
                ${sql.array([...a.approvers])}, ${a.created_at}, ${a.expires_at}, ${json(shown)}, ${json(internal)})`;
    }),
    moveApproval: (id, runId, runTrace) => guard(async () => {
      const internal = runTrace !== undefined ? { run_trace: runTrace } : {};
      await sql`UPDATE approvals SET run_id = ${runId}, shown = shown || ${sql.json({ run_id: runId } as never)}, internal = internal || ${sql.json(internal as never)}
        WHERE approval_id = ${id} AND status = 'pending'`;
    }),
    getApproval: (id) => guard(async () => {
      const [r] = await sql`SELECT shown, internal FROM approvals WHERE approval_id = ${id}`;
      return r ? approvalOf(r) : null;
    }),
    listApprovals: (q: ListApprovalsQuery) => guard(async () => {
      const v = q.visibleTo;
      const roles = (v?.roles ?? []).map((r) => `role:${r}`);
      // Only the filters given (see threads.ts, listThreads).
      const thread = q.thread_id === undefined ? sql`` : sql`AND thread_id = ${q.thread_id}`;
      const run = q.run_id === undefined ? sql`` : sql`AND run_id = ${q.run_id}`;
      const status = q.status === undefined ? sql`` : sql`AND status = ${q.status}`;
      const actor = q.requester_actor === undefined ? sql`` : sql`AND requester_actor = ${q.requester_actor}`;
      // What a caller may see: its own requests (approvals_requester, in the page's order), and
      // with roles, those its roles approve (approvals_approvers).
      const visible = !v ? sql`` : roles.length === 0 ? sql`AND requester = ${v.requester}` : sql`AND (requester = ${v.requester} OR approvers && ${sql.array(roles)}::text[])`;
      const rows = await sql`
        SELECT shown, internal FROM approvals WHERE true ${thread} ${run} ${status} ${actor} ${visible}
        ORDER BY created_at DESC, approval_id DESC LIMIT ${q.limit} OFFSET ${q.offset}`;
      return rows.map(approvalOf);
    }),
    decideApproval: (id, d: ApprovalDecision) => guard(async () => {
      const patch = withoutNul({ status: d.status, decided_by: d.decided_by, decided_via: d.decided_via, decided_at: d.decided_at, comment: d.comment });
      const drop = { ...(d.dropCall ? { query: null, body: null } : {}), ...(d.relay ? withoutNul({ nested: d.relay.nested, effect: d.relay.effect }) : {}) };
      const [r] = await sql`
        UPDATE approvals SET status = ${d.status},
          shown = shown || ${sql.json(patch as never)} || ${sql.json(drop as never)}
        WHERE approval_id = ${id} AND status = 'pending'
        RETURNING shown, internal`;
      return r ? approvalOf(r) : null;
    }),
    claimApprovalExecution: (id, at) => guard(async () => {
      const rows = await sql`
        UPDATE approvals SET internal = jsonb_set(internal, '{executed_at}', to_jsonb(${at}::text))
        WHERE approval_id = ${id} AND status = 'approved' AND internal->>'executed_at' IS NULL
        RETURNING 1`;
      return rows.length > 0;
    }),
    recordApprovalResult: (id, result) => guard(async () => {
      // The exact call is no longer needed once sent: keep only its answer.
      await sql`
        UPDATE approvals SET internal = internal || ${sql.json({ result: withoutNul(result), call: { query: [], body: null } } as never)},
          shown = shown || '{"outcome": "sent"}'
        WHERE approval_id = ${id}`;
    }),
    markOutcomeUnknown: (id) => guard(async () => {
      await sql`
        UPDATE approvals SET shown = shown || '{"outcome": "unknown"}'
        WHERE approval_id = ${id} AND coalesce(internal->'result', 'null'::jsonb) = 'null'::jsonb`;
    }),
    findApproval: (threadId, toolCallId, digest) => guard(async () => {
      const [r] = await sql`
        SELECT shown, internal FROM approvals
        WHERE thread_id = ${threadId} AND internal->>'tool_call_id' = ${toolCallId} AND shown->>'digest' = ${digest}
        LIMIT 1`;
      return r ? approvalOf(r) : null;
    }),
    dueApprovals: (now) => guard(async () => {
      const rows = await sql`SELECT shown, internal FROM approvals WHERE status = 'pending' AND expires_at <= ${now} ORDER BY expires_at LIMIT 500`;
      return rows.map(approvalOf);
    }),
  };
}
