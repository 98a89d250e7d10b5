/**
 * Starting a run on a thread for one message, as /chat and A2A do: claim (or create) the thread
 * with its lease, refuse a foreign one (403), a busy one (409 thread_busy), one waiting for a
 * decision (409 approval_pending); a thread whose decided approvals are still to be carried out
 * carries them out first, and the message is refused as busy meanwhile (it never overtakes them).
 */
import type { RunEvent } from "../agent/events.js";
import { expireIfDue } from "../approvals/decide.js";
import { publicApproval } from "../approvals/view.js";
import { type Caller, ownsThread } from "../auth/caller.js";
import { isoTime } from "../clock.js";
import { Refusal } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { LeaseHandle, RunRecord } from "../store/ports.js";
import type { RunsContext } from "./context.js";
import { executeRun, openRun, type RunHandle, type RunInput } from "./execute.js";
import { handOver } from "./leases.js";
import type { Resumer } from "./resume.js";

export interface TurnInput {
  readonly caller: Caller;
  readonly threadId: string;
  readonly message: string;
  readonly metadata: RunRecord["metadata"];
  readonly emit: (event: RunEvent) => void;
  readonly logger: Logger;
  /** The user's own words as a calling agent forwarded them (A2A's origin extension), if any. */
  readonly origin?: string | undefined;
  /** The request's server span (tracing on): the run's span is its child. */
  readonly span?: TraceSpan | undefined;
}

export const THREAD_FOREIGN = "This thread belongs to another principal.";

export const threadBusy = () => new Refusal("thread_busy", "A run is in progress on this thread.");

export async function startTurn(ctx: RunsContext, resumer: Resumer, input: TurnInput): Promise<RunHandle> {
  const { store, leases } = ctx;
  const { caller, threadId } = input;
  const now = isoTime(ctx.clock.now());
  const row = { thread_id: threadId, owner: caller.hash, actor: caller.principal.actor?.id ?? null, created_at: now, updated_at: now };
  // The thread and its lease are claimed in one write, and on a thread that write makes, the
  // run's record and the user message go with it.
  // Objects a waiting run keeps are written out whole, not spread: V8 gives a spread copy a
  // hidden class of its own (about 250 bytes a run).
  const opening = openRun(ctx, { caller, threadId, message: input.message, metadata: input.metadata, freshThread: true });
  const claimed = await store.claimThread(row, leases.claim("run"), { run: opening.record, messages: [opening.firstMessage!] });
  const handle = claimed.lease;
  if (!ownsThread(caller, claimed.row)) {
    if (handle) await leases.release(handle);
    throw new Refusal("thread_foreign", THREAD_FOREIGN);
  }
  if (!handle) throw threadBusy();
  // A thread made just now has no approvals and no messages: nothing to look at first.
  if (!claimed.created) {
    const cleared = await handOver(leases, handle, () => clearThread(ctx, resumer, threadId, handle, input));
    // The lease went to the resumed run (or was let go when another replica resumed it first).
    if (!cleared) throw threadBusy();
  }
  const run: RunInput = {
    caller,
    threadId,
    message: input.message,
    metadata: input.metadata,
    lease: handle,
    emit: input.emit,
    logger: input.logger,
    freshThread: claimed.created,
    origin: input.origin,
    // Written with the claim: the run does not write its record and first message again.
    opening: claimed.started ? { runId: opening.runId, record: opening.record, firstMessage: opening.firstMessage, recorded: true } : undefined,
    span: input.span,
  };
  return handOver(leases, handle, () => executeRun(ctx, run));
}

/**
 * Under the thread's lease: a paused run with a decision to carry out (decided just now by
 * expiry, or earlier by a person whose resume lost the race for the lease) is resumed first,
 * with this lease, and the message is refused as busy; a pending approval refuses the message
 * (409 approval_pending). Returns false when the lease went to the resumed run.
 */
async function clearThread(ctx: RunsContext, resumer: Resumer, threadId: string, handle: LeaseHandle, { logger, span }: TurnInput): Promise<boolean> {
  let { pending, due } = await ctx.store.threadBlockers(threadId);
  if (!due && pending.length > 0) {
    const fresh = await Promise.all(pending.map((a) => expireIfDue(ctx.decisions, a, logger)));
    pending = fresh.filter((a) => a.status === "pending");
    if (pending.length < fresh.length) due = (await ctx.store.threadBlockers(threadId)).due;
  }
  if (due) {
    await resumer.resumeHeld(handle, due, { emit: () => {}, logger, decider: null, span });
    return false;
  }
  if (pending.length > 0)
    throw new Refusal("approval_pending", "The thread waits for a decision on a gated call.", { approvals: pending.map((a) => publicApproval(a)) });
  return true;
}
