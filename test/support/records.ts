/** Store records for tests that write the store directly, with plain defaults. */
import type { RunRecord } from "../../src/store/ports.js";
import type { ApprovalRecord } from "../../src/store/records/approval.js";

/** A running run with nothing recorded yet; `fields` override (created_at and updated_at default to `at`). */
export function runRecord(runId: string, threadId: string, at: string, fields: Partial<RunRecord> = {}): RunRecord {
  return {
    run_id: runId,
    thread_id: threadId,
    status: "running",
    error_type: null,
    error_id: null,
    principal_hash: "0123456789abcdef0123456789abcdef",
    actor: null,
    metadata: {},
    usage: { input_tokens: 0, output_tokens: 0 },
    created_at: at,
    updated_at: at,
    ended_at: null,
    latency_ms: null,
    resumed_from: null,
    resumed_by: null,
    ...fields,
  };
}

/** A pending approval of a POST on thread `threadId`, requested by `requester`; `fields` override. */
export function approvalRecord(approvalId: string, threadId: string, requester: string, at: string, fields: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    approval_id: approvalId,
    thread_id: threadId,
    run_id: `run-of-${approvalId}`,
    status: "pending",
    api: "orders",
    method: "POST",
    path: "/orders",
    operation_id: null,
    rpc_method: null,
    a2a_operation: null,
    query: {},
    body: { item: "x" },
    tool: "t",
    reason: "t: because",
    approvers: ["requester"],
    requester,
    requester_actor: null,
    decide_with: "direct",
    relayers: [],
    decided_by: null,
    decided_via: null,
    digest: "sha256:00",
    nested: null,
    effect: null,
    created_at: at,
    expires_at: at,
    decided_at: null,
    comment: null,
    outcome: null,
    internal: {
      tool_call_id: `call-of-${approvalId}`,
      gate_key: "k",
      call: { query: [], body: { item: "x" } },
      requester_principal: { id: requester, roles: [], attributes: {}, actor: null },
      executed_at: null,
      result: null,
    },
    ...fields,
  };
}
