/** An approval once a decision is recorded (decideApproval in every adapter that keeps whole records). */
import type { ApprovalDecision, ApprovalRecord } from "./approval.js";

export function withDecision(a: ApprovalRecord, d: ApprovalDecision): ApprovalRecord {
  return {
    ...a,
    status: d.status,
    decided_by: d.decided_by,
    decided_via: d.decided_via,
    decided_at: d.decided_at,
    comment: d.comment,
    ...(d.dropCall ? { query: null, body: null } : {}),
    ...(d.relay ? { nested: d.relay.nested, effect: d.relay.effect } : {}),
  };
}
