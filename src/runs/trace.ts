/**
 * The spans of one run (spec 6.4, CONTRACT 7): `invoke_agent <A2A_NAME>` under the request that
 * started it (or the decision that resumed it), with the thread as `gen_ai.conversation.id`, the
 * run id, the hashed principal, the actor and AGENT_VERSION; a run resumed after a decision links
 * to the run that paused and holds `approval_resume <api>` until the calls that waited are carried
 * out. Made only while tracing is on: a run without tracing allocates nothing here.
 */
import type { Usage } from "../agent/events.js";
import type { Caller } from "../auth/caller.js";
import { ATTR } from "../observability/trace-attributes.js";
import type { TraceSpan, Tracing } from "../observability/tracing.js";
import type { RunRecord, RunStatus } from "../store/ports.js";

export interface RunTrace {
  readonly tracing: Tracing;
  /** The run's span: the parent of its model and tool spans. */
  readonly run: TraceSpan;
  /** `approval_resume`, until the waited calls are carried out (then undefined). */
  resume: TraceSpan | undefined;
}

export interface RunTraceInput {
  readonly caller: Caller;
  readonly threadId: string;
  readonly message?: string | undefined;
  readonly metadata: RunRecord["metadata"];
  /** The span of the request that started the run, or of the decision that resumed it. */
  readonly span?: TraceSpan | undefined;
  readonly resume?: { readonly approvalId: string; readonly decision: string; readonly api?: string | undefined; readonly pausedTrace?: string | undefined } | undefined;
}

export function startRunTrace(tracing: Tracing, runId: string, input: RunTraceInput): RunTrace | undefined {
  if (!tracing.enabled) return undefined;
  const { caller, resume } = input;
  const run = tracing.runSpan(
    {
      threadId: input.threadId,
      runId,
      principalHash: caller.hash,
      actor: caller.principal.actor?.id,
      resumes: resume?.pausedTrace,
      message: input.message,
      metadata: input.metadata,
    },
    input.span,
  );
  return { tracing, run, resume: resume ? tracing.approvalSpan("resume", run, resume.approvalId, resume.api, resume.decision) : undefined };
}

/** The calls that waited were carried out and their results written. */
export function resumeDone(trace: RunTrace | undefined): void {
  trace?.resume?.end();
  if (trace) trace.resume = undefined;
}

/** The run's end: its status, token usage and, when it failed, the error type (its message only under full). */
export function endRunTrace(
  trace: RunTrace | undefined,
  end: { readonly status: RunStatus; readonly errorType: string | null; readonly errorMessage?: string | undefined },
  usage: Usage,
): void {
  if (!trace) return;
  if (trace.resume) {
    // Stopped before the waited calls were carried out.
    trace.resume.event("not_carried_out").end();
    trace.resume = undefined;
  }
  const { run } = trace;
  run.set(ATTR.runStatus, end.status).usage(usage.input_tokens, usage.output_tokens);
  if (end.errorType !== null) run.fail(end.errorType, end.errorMessage);
  run.end();
}
