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
import { openRun, type RunHandle, startRun } from "./runner.js";

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
  const fresh = { thread_id: threadId, owner: caller.hash, actor: caller.principal.actor?.id ?? null, created_at: now, updated_at: now };
  const holder = `${deps.instanceId}:${ids.runId()}`;
  const ttl = deps.leaseTimings.ttlMs;
  // Where the store holds the lease, the thread and its lease are claimed in one write, and on a
  // thread that write makes, the run's record and the user message go with it.
  const together = deps.leaseInStore && store.claimThread !== undefined;
  const opening = together ? openRun(deps, { ...input, freshThread: true }) : undefined;
  const claimed = together
    ? await store.claimThread!(fresh, holder, ttl, { run: opening!.record, messages: [opening!.firstMessage!] })
    : { ...(await store.createThread(fresh)), lease: null, started: false };
  let held = claimed.lease;
  const drop = async () => {
    if (held) await lease.release(held).catch(() => {});
    held = null;
  };
  const { row, created } = claimed;
  if (!ownsThread(caller, row)) {
    await drop();
    throw forbidden(THREAD_FOREIGN);
  }
  // A thread made just now has no approvals and no messages: two reads fewer.
  // Expired approvals resume their run first, which needs the thread: ours is let go before.
  if (!created)
    await refuseWhilePending(deps, threadId, drop).catch(async (error: unknown) => {
      await drop();
      throw error;
    });
  // Claimed together and busy: 409. Otherwise (separate lease, or let go for a resume): take it now.
  const handle = held ?? (together && claimed.lease === null ? null : await lease.acquire(threadId, holder, ttl));
  if (!handle) throw threadBusy();
  try {
    return await startRun(deps, { ...input, lease: handle, freshThread: created, ...(claimed.started ? { opening: { ...opening!, recorded: true } } : {}) });
  } catch (error) {
    await lease.release(handle).catch(() => {});
    throw error;
  }
}

/** A thread waiting for a decision refuses new messages (409 approval_pending, spec 3.1). */
async function refuseWhilePending(deps: Deps, threadId: string, beforeResume: () => Promise<void>): Promise<void> {
  const listed = await deps.store.listApprovals({ thread_id: threadId, status: "pending", limit: 100, offset: 0 });
  if (listed.length === 0) return;
  const fresh = await Promise.all(listed.map((a) => expireIfDue(deps, a)));
  const pending = fresh.filter((a) => a.status === "pending");
  // Approvals that expired just now: their run resumes (and holds the thread) before new messages.
  if (pending.length === 0) {
    await beforeResume();
    await resumeExpired(deps, fresh);
  }
  if (pending.length > 0)
    throw new HttpError("conflict", 409, {
      code: "approval_pending",
      detail: "The thread waits for a decision on a gated call.",
      approvals: pending.map((a) => publicApproval(a)),
    });
}
