/**
 * Who may decide an approval (spec 5.7) and how a decision is recorded (3.2): once, atomically,
 * with every refusal answered before anything changes. The decision is the durable intent: the
 * write that records it is what makes the paused run due to resume (store `dueRuns`), so a
 * decision that is recorded is carried out even if the process that took it stops right after.
 */
import type { Caller } from "../auth/caller.js";
import { type Clock, isoTime } from "../clock.js";
import { Refusal } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { Store, ThreadRow } from "../store/ports.js";
import type { ApprovalRecord } from "./types.js";
import { decidedRelay } from "./relay.js";
import type { JsonValue } from "../json.js";

/** A decision's comment: at most this many characters (code points, CONTRACT 5). */
export const COMMENT_MAX_CHARS = 1000;
/** What a comment must not hold (CONTRACT 5): control characters, C0 and C1, other than newline and tab. */
// eslint-disable-next-line no-control-regex
export const COMMENT_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export interface DecisionRequest {
  readonly decision: "approve" | "reject";
  readonly comment?: string | undefined;
  readonly digest?: string | undefined;
}

/** What recording decisions needs. */
export interface DecisionBook {
  readonly store: Store;
  readonly clock: Clock;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** TRACE_CAPTURE=full keeps a decided approval's query and body. */
  readonly keepDecidedCalls: boolean;
}

/** Null when the caller may decide; otherwise the refusal code. */
export function refusalToDecide(caller: Caller, approval: ApprovalRecord, thread: ThreadRow): "not_an_approver" | "approval_direct_only" | null {
  const actor = caller.principal.actor;
  // The user calling directly owns what their agents asked for; an agent only its own requests.
  const requester = approval.requester === caller.hash && (actor === null || approval.requester_actor === actor.id);
  if (actor) {
    // A delegated principal never decides as a role approver; it relays the requester's
    // decision only where the rule says so and through the agent that started the thread.
    if (!requester || !approval.approvers.includes("requester")) return "not_an_approver";
    if (approval.decide_with !== "relayed") return "approval_direct_only";
    if (thread.actor !== actor.id || !approval.relayers.includes(actor.id)) return "approval_direct_only";
    return null;
  }
  if (requester) return approval.approvers.includes("requester") ? null : "not_an_approver";
  const roles = caller.principal.roles;
  return approval.approvers.some((a) => a.startsWith("role:") && roles.includes(a.slice(5))) ? null : "not_an_approver";
}

/** Marks the approval expired if its time has passed. Returns the record as it now stands. */
/** `logger` is the request's (or the sweep's), so the line carries its request id. */
export async function expireIfDue(book: DecisionBook, approval: ApprovalRecord, logger: Logger = book.logger): Promise<ApprovalRecord> {
  const now = isoTime(book.clock.now());
  if (approval.status !== "pending" || approval.expires_at > now) return approval;
  const expired = await book.store.decideApproval(approval.approval_id, {
    status: "expired",
    decided_by: null,
    decided_via: null,
    decided_at: now,
    comment: null,
    dropCall: !book.keepDecidedCalls,
    ...relayPatch(approval),
  });
  if (expired) {
    book.metrics.approvals.inc({ event: "expired" });
    logger.info("approval expired", { approval_id: approval.approval_id, thread_id: approval.thread_id });
    return expired;
  }
  return (await book.store.getApproval(approval.approval_id)) ?? approval;
}

/** A relayed decision's nested calls lose their query and body once decided (spec 2.3). */
function relayPatch(a: ApprovalRecord): { relay?: { nested: JsonValue; effect: JsonValue } } {
  const relay = decidedRelay(a.nested, a.effect);
  return relay ? { relay } : {};
}

const notPending = (a: ApprovalRecord) =>
  a.status === "expired"
    ? new Refusal("approval_expired", "The approval expired; the call was not sent.")
    : new Refusal("approval_not_pending", `The approval is already ${a.status}.`, { status: a.status });

export async function recordDecision(
  book: DecisionBook,
  caller: Caller,
  thread: ThreadRow,
  approvalId: string,
  request: DecisionRequest,
  logger: Logger = book.logger,
): Promise<ApprovalRecord> {
  let approval = await book.store.getApproval(approvalId);
  if (!approval || approval.thread_id !== thread.thread_id) throw new Refusal("approval_not_found", "No such approval on this thread.");
  const refusal = refusalToDecide(caller, approval, thread);
  if (refusal === "not_an_approver") throw new Refusal(refusal, "You are not an approver of this call.");
  if (refusal === "approval_direct_only") throw new Refusal(refusal, "This approval is decided directly by the person, not through an agent.");

  approval = await expireIfDue(book, approval, logger);
  if (approval.status !== "pending") throw notPending(approval);
  const relayed = caller.principal.actor !== null;
  if ((relayed && request.digest === undefined) || (request.digest !== undefined && request.digest !== approval.digest))
    throw new Refusal("approval_digest_mismatch", "The decision does not name this call's digest.");

  const decided = await book.store.decideApproval(approvalId, {
    status: request.decision === "approve" ? "approved" : "rejected",
    decided_by: caller.hash,
    decided_via: relayed ? (caller.principal.actor?.id ?? null) : null,
    decided_at: isoTime(book.clock.now()),
    comment: request.comment ?? null,
    dropCall: !book.keepDecidedCalls,
    ...relayPatch(approval),
  });
  if (!decided) throw notPending((await book.store.getApproval(approvalId)) ?? approval);
  book.metrics.approvals.inc({ event: decided.status });
  logger.info("approval decided", { approval_id: approvalId, thread_id: thread.thread_id, status: decided.status });
  return decided;
}
