/** What readers see of an approval: every field of spec 2.3, never the internal part. */
import type { ApprovalRecord } from "./types.js";

export type PublicApproval = Omit<ApprovalRecord, "internal">;

/** `showCall` false hides query and body (a read-across reader outside TRACE_CAPTURE=full). */
export function publicApproval(record: ApprovalRecord, showCall = true): PublicApproval {
  const { internal: _internal, ...shown } = record;
  return showCall ? shown : { ...shown, query: null, body: null };
}
