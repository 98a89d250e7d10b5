/**
 * Expiry (spec 3.2): pending approvals past `expires_at` become expired (counted, logged), and a
 * paused run whose last approval expired resumes in the background: its tool reads 'not
 * approved', nothing is sent, and the model answers on the thread.
 */
import { isoTime } from "../clock.js";
import type { Deps } from "../deps.js";
import { expireIfDue } from "./decide.js";
import { resumeAfterDecision } from "./resume.js";
import type { ApprovalRecord } from "./types.js";

export async function sweepExpired(deps: Deps): Promise<number> {
  const due = await deps.store.dueApprovals(isoTime(deps.clock.now()));
  const expired: ApprovalRecord[] = [];
  for (const a of due) {
    const after = await expireIfDue(deps, a);
    if (after.status === "expired" && a.status === "pending") expired.push(after);
  }
  await resumeExpired(deps, expired);
  return expired.length;
}

/** Resumes, in the background, each paused run whose approvals are now all decided. */
export async function resumeExpired(deps: Deps, expired: readonly ApprovalRecord[]): Promise<void> {
  const seen = new Set<string>();
  for (const approval of expired) {
    if (seen.has(approval.run_id)) continue;
    seen.add(approval.run_id);
    try {
      await resumeAfterDecision(deps, {
        approval,
        decision: "expired",
        decider: null,
        emit: () => {},
        logger: deps.logger.child({ approval_id: approval.approval_id }),
      });
    } catch (error) {
      deps.logger.warning("resuming after expiry failed", { run_id: approval.run_id, error_type: error instanceof Error ? error.name : "Error" });
    }
  }
}

/** Sweeps every `intervalMs` until stopped. */
export function startSweeper(deps: Deps, intervalMs: number): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepExpired(deps)
      .catch((error: unknown) => deps.logger.warning("approval sweep failed", { error_type: error instanceof Error ? error.name : "Error" }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  return () => clearInterval(timer);
}
