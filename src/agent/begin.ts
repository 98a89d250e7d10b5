/**
 * Starting a run on a thread for one message, as /chat and A2A do: claim (or create) the
 * thread, refuse a foreign one (403), one waiting for a decision (409 approval_pending) or a
 * busy one (409 thread_busy), then take the lease and start the run.
 */
import { type Caller, ownsThread } from "../auth/caller.js";
import { expireIfDue } from "../approvals/decide.js";
import { resumeExpired } from "../approvals/sweep.js";
import { publicApproval } from "../approvals/view.js";
import { isoTime } from "../clock.js";
import type { Deps } from "../deps.js";
import type { Logger } from "../observability/logger.js";
import { forbidden, HttpError, THREAD_FOREIGN, threadBusy } from "../problems.js";
import type { RunRecord } from "../store/ports.js";
import type { RunEvent } from "./events.js";
import { type RunHandle, startRun } from "./runner.js";

export interface BeginRun {
  readonly caller: Caller;
  readonly threadId: string;
  readonly message: string;
  readonly metadata: RunRecord["metadata"];
  readonly emit: (event: RunEvent) => void;
  readonly logger: Logger;
  /** Added to the system prompt for this run (A2A's note that another agent wrote the request). */
  readonly systemNote?: string;
  /** The user's own words for require_user_mentioned, when not the message itself. */
  readonly userWords?: string | undefined;
}

export async function beginRun(deps: Deps, input: BeginRun): Promise<RunHandle> {
  const { store, lease, clock, ids } = deps;
  const { caller, threadId } = input;
  const now = isoTime(clock.now());
  const { row, created } = await store.createThread({ thread_id: threadId, owner: caller.hash, actor: caller.principal.actor?.id ?? null, created_at: now, updated_at: now });
  if (!ownsThread(caller, row)) throw forbidden(THREAD_FOREIGN);
  // A thread made just now has no approvals and no messages: two reads fewer.
  if (!created) await refuseWhilePending(deps, threadId);
  const handle = await lease.acquire(threadId, `${deps.instanceId}:${ids.runId()}`, deps.leaseTimings.ttlMs);
  if (!handle) throw threadBusy();
  try {
    return await startRun(deps, { ...input, lease: handle, freshThread: created });
  } catch (error) {
    await lease.release(handle).catch(() => {});
    throw error;
  }
}

/** A thread waiting for a decision refuses new messages (409 approval_pending, spec 3.1). */
async function refuseWhilePending(deps: Deps, threadId: string): Promise<void> {
  const listed = await deps.store.listApprovals({ thread_id: threadId, status: "pending", limit: 100, offset: 0 });
  if (listed.length === 0) return;
  const fresh = await Promise.all(listed.map((a) => expireIfDue(deps, a)));
  const pending = fresh.filter((a) => a.status === "pending");
  // Approvals that expired just now: their run resumes (and holds the thread) before new messages.
  if (pending.length === 0) await resumeExpired(deps, fresh);
  if (pending.length > 0)
    throw new HttpError("conflict", 409, {
      code: "approval_pending",
      detail: "The thread waits for a decision on a gated call.",
      approvals: pending.map((a) => publicApproval(a)),
    });
}
