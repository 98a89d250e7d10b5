/**
 * After the last decision on a paused run, a new run resumes it (spec 3.1): it takes the thread's
 * lease, acts as the requester (rebuilt from the approval, without credentials, when a role
 * approver decided) and runs the tool calls that waited, then the model goes on.
 */
import type { Caller } from "../auth/caller.js";
import { ACTIONS, type Principal } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import type { RunEvent } from "../agent/events.js";
import { type RunHandle, startRun } from "../agent/runner.js";
import type { Logger } from "../observability/logger.js";
import type { ApprovalRecord } from "./types.js";
import { outcomeCollector } from "../agent/outcome.js";

export type ResumeOutcome = { readonly kind: "started"; readonly run: RunHandle } | { readonly kind: "waiting" | "busy" | "nothing" };

export async function resumeAfterDecision(
  deps: Deps,
  input: {
    readonly approval: ApprovalRecord;
    readonly decision: "approve" | "reject" | "expired";
    /** The decider, when a person or agent decided (null for expiry). */
    readonly decider: Caller | null;
    readonly emit: (event: RunEvent) => void;
    readonly logger: Logger;
  },
): Promise<ResumeOutcome> {
  const { approval } = input;
  const pending = await deps.store.listApprovals({ run_id: approval.run_id, status: "pending", limit: 1, offset: 0 });
  if (pending.length > 0) return { kind: "waiting" };
  const lease = await deps.lease.acquire(approval.thread_id, `${deps.instanceId}:${deps.ids.runId()}`, deps.leaseTimings.ttlMs);
  if (!lease) return { kind: "busy" };
  try {
    const paused = await deps.store.getRun(approval.run_id);
    if (!paused || paused.status !== "awaiting_approval" || paused.resumed_by !== null) {
      await deps.lease.release(lease);
      return { kind: "nothing" };
    }
    // The resumed run acts as the requester: the decider itself only when it is that same
    // principal through the same agent (so it keeps its credentials), else rebuilt from the approval.
    const d = input.decider;
    const same = d !== null && d.hash === approval.requester && (d.principal.actor?.id ?? null) === approval.requester_actor;
    const caller = same ? d : requesterOf(approval);
    const collector = outcomeCollector();
    const run = await startRun(deps, {
      caller,
      threadId: approval.thread_id,
      metadata: paused.metadata,
      lease,
      emit: (event) => {
        collector.observe(event);
        input.emit(event);
      },
      logger: input.logger,
      resume: { approvalId: approval.approval_id, decision: input.decision, pausedRunId: approval.run_id },
    });
    // The paused run is resumed once: the lease keeps others out until this is written.
    await deps.store.updateRun(approval.run_id, { resumed_by: run.runId });
    // Whoever decided (HTTP, A2A or expiry), tasks waiting on the approval take the outcome.
    void run.done.then(() => deps.afterResume?.(approval, collector.outcome()));
    return { kind: "started", run };
  } catch (error) {
    await deps.lease.release(lease).catch(() => {});
    throw error;
  }
}

/** The requester rebuilt from the approval: public fields, every permission, no credentials. */
function requesterOf(approval: ApprovalRecord): Caller {
  const p = approval.internal.requester_principal;
  const principal: Principal = {
    id: p.id,
    roles: p.roles,
    permissions: new Set(ACTIONS),
    attributes: p.attributes,
    credentials: {},
    actor: p.actor,
  };
  return { principal, hash: approval.requester, readAcross: false };
}
