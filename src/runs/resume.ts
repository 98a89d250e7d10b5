/**
 * Resuming a paused run once every approval it waits for is decided (spec 3.1, 3.2). A new run
 * takes the thread's lease, acts as the requester (rebuilt from the approval, without
 * credentials, when someone else decided) and carries out the tool calls that waited, then the
 * model goes on. Whoever holds the thread next resumes a due run before anything else: the
 * decider when it gets the lease, else the chat that took the thread, else the recovery sweep.
 */
import type { RunEvent } from "../agent/events.js";
import { outcomeCollector, type RunOutcome } from "../agent/outcome.js";
import type { ApprovalRecord } from "../approvals/types.js";
import type { Caller } from "../auth/caller.js";
import { ACTIONS, type Principal } from "../auth/principal.js";
import { hasCode } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { LeaseHandle, RunRecord } from "../store/ports.js";
import type { RunsContext } from "./context.js";
import { DATABASE_UNAVAILABLE, executeRun, type RunHandle } from "./execute.js";
import { handOver } from "./leases.js";

/** Failed resumes of one paused run before it is given up (see gaveUp). */
export const MAX_FAILED_RESUMES = 3;

export type ResumeOutcome =
  | { readonly kind: "started"; readonly run: RunHandle }
  /** The thread is busy: its next holder (or the recovery sweep) resumes the run. */
  | { readonly kind: "queued" }
  /** Nothing to resume: another run resumed it already. */
  | { readonly kind: "nothing" };

/** Called when a resumed run has ended: A2A tasks waiting on the approval take its outcome. */
export type ResumeListener = (approval: ApprovalRecord, outcome: RunOutcome) => Promise<void> | void;

interface ResumeStream {
  readonly emit: (event: RunEvent) => void;
  readonly logger: Logger;
  /** The decider, when a person or agent decided just now (null for expiry and recovery). */
  readonly decider: Caller | null;
  /** The span of the request that resumes the run (tracing on): the resumed run's trace parent. */
  readonly span?: TraceSpan | undefined;
}

export interface Resumer {
  /** With the thread's lease already held: resumes `paused` if it is still due, else lets the lease go. */
  resumeHeld(handle: LeaseHandle, paused: RunRecord, stream: ResumeStream): Promise<RunHandle | null>;
  /** After a decision: resumes the run if the thread can be had within `waitMs`. */
  afterDecision(approval: ApprovalRecord, stream: ResumeStream, waitMs: number): Promise<ResumeOutcome>;
  onResumed(listener: ResumeListener): void;
}

export function createResumer(ctx: RunsContext): Resumer {
  const listeners: ResumeListener[] = [];

  const resumeHeld: Resumer["resumeHeld"] = (handle, paused, stream) =>
    handOver(ctx.leases, handle, async () => {
      const [run, approvals] = await Promise.all([ctx.store.getRun(paused.run_id), ctx.store.listApprovals({ run_id: paused.run_id, limit: 100, offset: 0 })]);
      const deciding = lastDecided(approvals);
      if (!run || run.status !== "awaiting_approval" || run.resumed_by !== null || !deciding) {
        await ctx.leases.release(handle);
        return null;
      }
      const lastTry = await gaveUp(run);
      if (lastTry !== undefined) {
        await ctx.leases.release(handle);
        // Nothing will carry the decisions out: the tasks waiting on them fail now.
        await notify(deciding, { ended: "error", text: "", structured: undefined, approvals: [], errorCode: "run_failed", runId: lastTry });
        return null;
      }
      const collector = outcomeCollector();
      const caller = actingCaller(stream.decider, deciding);
      const started = await executeRun(ctx, {
        caller,
        threadId: run.thread_id,
        metadata: run.metadata,
        lease: handle,
        emit: (event) => {
          collector.observe(event);
          stream.emit(event);
        },
        // The run acts as the requester, whoever resumed it: its lines say so.
        logger: stream.logger.child({ approval_id: deciding.approval_id, principal_hash: caller.hash, actor: caller.principal.actor?.id }),
        resume: { approvalId: deciding.approval_id, decision: decisionOf(deciding), pausedRunId: run.run_id, api: deciding.api, pausedTrace: pausedTrace(deciding, approvals) },
        span: stream.span,
      });
      // Whoever decided (HTTP, A2A, expiry) and whoever resumed, tasks waiting on it take the
      // outcome: once the run carried the decided calls out. A run that ended before (stopped,
      // cut off, the database gone) leaves the paused run due, and the run that resumes it next
      // settles them.
      // Tracked from now: on workerd a request's I/O ends once App.settled() says nothing is
      // left, and the look-up below, before any listener has handed on its settling, is work left.
      const followUp = started.done.then(async () => {
        const paused = await ctx.store.getRun(run.run_id).catch(() => null);
        if (paused?.status === "awaiting_approval" && paused.resumed_by === null) return;
        await notify(deciding, collector.outcome());
      });
      ctx.track?.(followUp);
      return started;
    });

  async function notify(deciding: ApprovalRecord, outcome: RunOutcome): Promise<void> {
    for (const listener of listeners) {
      try {
        await listener(deciding, outcome);
      } catch (error) {
        ctx.logger.warning("settling after a resumed run failed", { error_type: error instanceof Error ? error.name : "Error" });
      }
    }
  }

  /**
   * A run that fails before it carries the calls out (a model that is not configured, say) would
   * be resumed again by every sweep: after MAX_FAILED_RESUMES failed tries (a database that did
   * not answer does not count) the paused run is marked resumed by the last of them, loudly, and
   * the thread is free again. The decided calls were never claimed (nothing was sent); their tool
   * calls read as interrupted on the next run.
   */
  async function gaveUp(run: RunRecord): Promise<string | undefined> {
    // A database that stopped answering is not the run's fault: it is tried again until it answers.
    const failed = (await ctx.store.listRuns(run.thread_id)).filter((r) => r.resumed_from === run.run_id && r.status === "error" && r.error_type !== DATABASE_UNAVAILABLE);
    if (failed.length < MAX_FAILED_RESUMES) return undefined;
    const lastTry = failed.at(-1)!.run_id;
    await ctx.store.markResumed(run.run_id, lastTry);
    ctx.logger.warning("a decided run failed to resume too often; its decisions were not carried out", {
      run_id: run.run_id,
      thread_id: run.thread_id,
      attempts: failed.length,
    });
    return lastTry;
  }

  return {
    resumeHeld,
    async afterDecision(approval, stream, waitMs) {
      try {
        // Every decision resumes the run (spec 3.1): it carries this call out and pauses again for
        // the calls of its turn still pending.
        const handle = await ctx.leases.take(approval.thread_id, "resume", waitMs);
        if (!handle) return { kind: "queued" };
        const paused = await handOver(ctx.leases, handle, () => ctx.store.getRun(approval.run_id));
        if (!paused) {
          await ctx.leases.release(handle);
          return { kind: "nothing" };
        }
        const run = await resumeHeld(handle, paused, stream);
        return run ? { kind: "started", run } : { kind: "nothing" };
      } catch (error) {
        // The decision is recorded and makes the run due: a database that stops answering now
        // only delays the resume, which the next holder of the thread or the sweep carries out.
        // Answering 503 here would say nothing was done.
        if (!hasCode(error, "unavailable")) throw error;
        stream.logger.warning("the decision is recorded; its run could not be resumed at once (database unreachable or busy), the next holder of the thread resumes it", {
          approval_id: approval.approval_id,
        });
        return { kind: "queued" };
      }
    },
    onResumed: (listener) => void listeners.push(listener),
  };
}

/** The approval decided last: the resumed run's message.start names it. */
function lastDecided(approvals: readonly ApprovalRecord[]): ApprovalRecord | undefined {
  let last: ApprovalRecord | undefined;
  for (const a of approvals) if (a.decided_at !== null && (!last || a.decided_at >= last.decided_at!)) last = a;
  return last;
}

/**
 * The paused run's span, kept with its approvals when it paused (the gate writes it, and again
 * when a pending approval moves to a run that pauses anew): the resumed run's span links to it.
 */
function pausedTrace(deciding: ApprovalRecord, approvals: readonly ApprovalRecord[]): string | undefined {
  return deciding.internal.run_trace ?? approvals.find((a) => a.internal.run_trace)?.internal.run_trace ?? undefined;
}

function decisionOf(a: ApprovalRecord): "approve" | "reject" | "expired" {
  return a.status === "approved" ? "approve" : a.status === "expired" ? "expired" : "reject";
}

/**
 * The resumed run acts as the requester: the decider itself only when it is that same principal
 * through the same agent (so it keeps its credentials), else rebuilt from the approval.
 */
function actingCaller(decider: Caller | null, approval: ApprovalRecord): Caller {
  const same = decider !== null && decider.hash === approval.requester && (decider.principal.actor?.id ?? null) === approval.requester_actor;
  return same ? decider : requesterOf(approval);
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
