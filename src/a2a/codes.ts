/**
 * How a refusal of the domain reads in a failed task's (or a refused decision's) error data part
 * (spec 4.5): the one table from domain codes to A2A, as errors.ts's is to HTTP.
 */
import type { RefusalCode } from "../errors.js";

export const A2A_CODE: Readonly<Record<RefusalCode, string>> = {
  forbidden: "forbidden",
  thread_foreign: "forbidden",
  not_found: "run_failed",
  thread_busy: "thread_busy",
  approval_pending: "approval_pending",
  approval_not_found: "approval_not_found",
  not_an_approver: "not_an_approver",
  approval_direct_only: "approval_direct_only",
  approval_not_pending: "approval_not_pending",
  approval_expired: "approval_expired",
  approval_digest_mismatch: "approval_digest_mismatch",
};
