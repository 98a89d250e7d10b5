/**
 * One run's lifecycle (spec 3.1): record, lease renewal, wall-clock timeout, cancellation, the
 * loop, and the final status in the record, the metrics and the end-of-run log line. The
 * transport (SSE today, A2A later) supplies `emit` and tells the run when its client is gone.
 */
import type { Caller } from "../auth/caller.js";
import { publicPrincipal } from "../auth/principal.js";
import { isoTime } from "../clock.js";
import type { Deps } from "../deps.js";
import { isAppError } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { LeaseHandle, Message, RunRecord, RunStatus, ToolCall } from "../store/ports.js";
import { publicApproval, type PublicApproval } from "../approvals/view.js";
import type { RunEvent, SseErrorCode, Usage } from "./events.js";
import { closeOpenToolCalls, runLoop } from "./loop.js";
import { noPolicyClient } from "../policy/types.js";

/** The lease is renewed this often and lasts this long (spec 8); tests may shorten both. */
export interface LeaseTimings {
  readonly renewMs: number;
  readonly ttlMs: number;
}
export const LEASE_TIMINGS: LeaseTimings = { renewMs: 5_000, ttlMs: 30_000 };

type StopKind = "timeout" | "cancelled" | "interrupted";

class RunStopped extends Error {
  constructor(readonly kind: StopKind) {
    super(`run ${kind}`);
    this.name = "RunStopped";
  }
}

export interface RunInput {
  readonly caller: Caller;
  readonly threadId: string;
  /** The user's message; absent when the run resumes after an approval decision. */
  readonly message?: string;
  /** The run resumes the tool calls that waited for `approvalId`, decided with `decision`. */
  readonly resume?: { readonly approvalId: string; readonly decision: "approve" | "reject" | "expired"; readonly pausedRunId: string };
  readonly metadata: RunRecord["metadata"];
  readonly lease: LeaseHandle;
  readonly emit: (event: RunEvent) => void;
  /** The request's logger (request id, principal hash, actor already bound). */
  readonly logger: Logger;
  /** Added to the system prompt for this run. */
  readonly systemNote?: string;
  /** The thread was created for this run: it has no history to read. */
  readonly freshThread?: boolean;
  /** The user's own words for require_user_mentioned (defaults to the message; A2A sets it). */
  readonly userWords?: string | undefined;
  /** Made (and written with the thread's claim) before the run started: see openRun. */
  readonly opening?: RunOpening;
}

/** What a run writes first: its record and, on a thread made for it, the user message. */
export interface RunOpening {
  readonly runId: string;
  readonly record: RunRecord;
  readonly firstMessage: Message | undefined;
  /** Already stored (with the thread's claim): startRun does not write them again. */
  readonly recorded: boolean;
}

type OpeningInput = Pick<RunInput, "caller" | "threadId" | "message" | "resume" | "metadata" | "freshThread">;

export function openRun(deps: Deps, input: OpeningInput): Omit<RunOpening, "recorded"> {
  const runId = deps.ids.runId();
  const at = isoTime(deps.clock.now());
  // On a thread made for this run the user message needs no history: it is written with the record.
  const firstMessage: Message | undefined =
    input.freshThread && !input.resume ? { id: deps.ids.messageId(), role: "user", content: input.message ?? "" } : undefined;
  const record: RunRecord = {
    run_id: runId,
    thread_id: input.threadId,
    status: "running",
    error_type: null,
    error_id: null,
    principal_hash: input.caller.hash,
    actor: input.caller.principal.actor?.id ?? null,
    metadata: input.metadata,
    usage: { input_tokens: 0, output_tokens: 0 },
    created_at: at,
    updated_at: at,
    ended_at: null,
    latency_ms: null,
    resumed_from: input.resume?.pausedRunId ?? null,
    resumed_by: null,
  };
  return { runId, record, firstMessage };
}

export interface RunHandle {
  readonly runId: string;
  /** The client went away: the run stops as `cancelled`. */
  cancel(): void;
  /** Resolves with the final status once everything is written and the lease released. */
  readonly done: Promise<RunStatus>;
}

export async function startRun(deps: Deps, input: RunInput): Promise<RunHandle> {
  const { store, clock, ids, metrics, settings } = deps;
  const { caller, threadId, lease, emit } = input;
  const opening = input.opening ?? { ...openRun(deps, input), recorded: false };
  const { runId, firstMessage } = opening;
  const started = performance.now();
  const logger = input.logger.child({ run_id: runId, thread_id: threadId });
  if (!opening.recorded)
    await store.createRun(opening.record, firstMessage ? { messages: [firstMessage], at: opening.record.created_at, fence: lease } : undefined);
  metrics.activeRuns.inc();

  const controller = new AbortController();
  const stop = (kind: StopKind) => {
    if (!controller.signal.aborted) controller.abort(new RunStopped(kind));
  };
  // One timer per run serves both the wall clock and the lease renewal.
  const deadline = started + settings.RUN_TIMEOUT_S * 1000;
  const { renewMs, ttlMs } = deps.leaseTimings;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    const now = performance.now();
    if (now >= deadline) return stop("timeout");
    if (now - started >= renewMs) {
      deps.lease.renew(lease, ttlMs).then(
        (held) => held || stop("interrupted"),
        () => stop("interrupted"),
      );
    }
    timer = setTimeout(tick, Math.min(renewMs, deadline - now));
  };
  timer = setTimeout(tick, Math.min(renewMs, deadline - started));

  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  // Where the store also holds the lease, the last answer, the final record and the release are
  // one write; the stream's message.end follows it, so a reader who sees it finds the answer stored.
  const finishTogether = deps.leaseInStore && store.finishRun !== undefined;
  let finished = false;
  const execute = async (): Promise<{ status: RunStatus; errorType: string | null; errorId: string | null }> => {
    emit({
      type: "message.start",
      thread_id: threadId,
      run_id: runId,
      ...(input.resume ? { approval_id: input.resume.approvalId, decision: input.resume.decision } : {}),
    });
    try {
      const persist = async (batch: readonly Message[]) => {
        // A stopped run writes nothing more (a lost lease may already belong to another run).
        controller.signal.throwIfAborted();
        await store.appendMessages(threadId, batch, isoTime(clock.now()), lease);
      };
      const history = input.freshThread ? [] : await store.getMessages(threadId);
      let messages: Message[];
      let resume: { calls: ToolCall[]; reason: string } | undefined;
      if (input.resume) {
        resume = waitingCalls(history);
        messages = history;
      } else if (firstMessage) {
        messages = [firstMessage];
      } else {
        const repairs = closeOpenToolCalls(history, ids);
        const user: Message = { id: ids.messageId(), role: "user", content: input.message ?? "" };
        await persist([...repairs, user]);
        messages = [...history, ...repairs, user];
      }
      const model = deps.model();
      const rs = deps.responseSchema;
      const structured = rs && {
        schema: rs.schema,
        checker: rs.checker,
        strategy: rs.strategy === "tool" || (rs.strategy === "auto" && !model.structuredOutput) ? ("tool" as const) : ("provider" as const),
      };
      const result = await runLoop({
        deferFinal: finishTogether,
        model,
        system: input.systemNote ? `${deps.system}\n\n${input.systemNote}` : deps.system,
        tools: deps.tools,
        recursionLimit: settings.RECURSION_LIMIT,
        dev: settings.dev,
        signal: controller.signal,
        ids,
        logger,
        messages,
        emit,
        persist,
        toolContext: { principal: publicPrincipal(caller.principal), threadId, runId, userMentioned: mentionCheck(input.userWords ?? input.message ?? lastUserWords(history)) },
        apiFor: deps.policyClient
          ? deps.policyClient.forRun({ threadId, runId, principal: caller.principal, signal: controller.signal, logger, resumed: input.resume !== undefined })
          : () => noPolicyClient,
        isPaused: (toolCallId) => deps.pauses.isPaused(runId, toolCallId),
        ...(structured ? { structured } : {}),
        ...(resume ? { resume } : {}),
      });
      Object.assign(usage, result.usage);
      if (result.final && result.final.length > 0) {
        if (controller.signal.aborted) throw controller.signal.reason;
        const at = isoTime(clock.now());
        await store.finishRun!(
          runId,
          { status: result.status, error_type: null, error_id: null, usage, updated_at: at, ended_at: at, latency_ms: Math.round(performance.now() - started) },
          { messages: result.final, at },
          lease,
        );
        finished = true;
      }
      const waiting = result.status === "awaiting_approval" ? await pendingApprovals(deps, runId) : [];
      emit({
        type: "message.end",
        thread_id: threadId,
        run_id: runId,
        usage: { ...usage },
        latency_ms: Math.round(performance.now() - started),
        status: result.status,
        ...(waiting.length > 0 ? { approval: waiting[0], approvals: waiting } : {}),
        ...(result.structured !== undefined ? { structured_response: result.structured } : {}),
      });
      return { status: result.status, errorType: null, errorId: null };
    } catch (error) {
      const stopped = controller.signal.aborted ? (controller.signal.reason as RunStopped) : undefined;
      if (stopped?.kind === "cancelled" || stopped?.kind === "interrupted")
        return { status: stopped.kind, errorType: null, errorId: null };
      if ((error as { name?: string }).name === "LeaseLost") {
        // Another run holds the thread now: this one stops without writing (its stream just ends).
        controller.abort(new RunStopped("interrupted"));
        return { status: "interrupted", errorType: "LeaseLost", errorId: null };
      }
      const errorId = ids.errorId();
      if (isAppError(error) && error.code === "unavailable") {
        logger.warning("run failed: database unreachable", { error_id: errorId });
        emit(errorEvent("unavailable", `The database is unreachable. Reference: ${errorId}.`, errorId, runId));
        return { status: "error", errorType: error.name, errorId };
      }
      if (isAppError(error) && error.code === "invalid_structured_response") {
        logger.warning("no answer fitted the response schema", { error_id: errorId });
        emit(errorEvent("invalid_structured_response", `No answer fitted the response schema. Reference: ${errorId}.`, errorId, runId));
        return { status: "error", errorType: error.name, errorId };
      }
      if (stopped?.kind === "timeout") {
        emit(errorEvent("timeout", "The run took longer than RUN_TIMEOUT_S and was stopped.", errorId, runId));
        return { status: "timeout", errorType: "Timeout", errorId };
      }
      const errorType = error instanceof Error ? error.name : "Error";
      logger.error("run failed", { error_id: errorId, error_type: errorType, ...(settings.dev ? { detail: detailOf(error) } : {}) });
      // A configuration error names the missing setting (never a value), so the caller can act on it.
      const message = isAppError(error) && error.code === "configuration" ? `${error.message} Reference: ${errorId}.` : `The run failed. Reference: ${errorId}.`;
      emit({ ...errorEvent("run_failed", message, errorId, runId), ...(settings.dev ? { detail: detailOf(error) } : {}) });
      return { status: "error", errorType, errorId };
    }
  };

  const done = execute().then(async ({ status, errorType, errorId }) => {
    clearTimeout(timer);
    const latencyMs = Math.round(performance.now() - started);
    metrics.activeRuns.dec();
    metrics.runs.inc({ status });
    metrics.runDuration.observe(latencyMs / 1000);
    metrics.tokens.inc({ kind: "input" }, usage.input_tokens);
    metrics.tokens.inc({ kind: "output" }, usage.output_tokens);
    const endedAt = isoTime(clock.now());
    deps.pauses.forget(runId);
    // The record and the lease are independent: written side by side (unless finished together).
    if (!finished) await Promise.all([
      store.updateRun(runId, { status, error_type: errorType, error_id: errorId, usage, updated_at: endedAt, ended_at: endedAt, latency_ms: latencyMs }).catch((error: unknown) => {
        logger.warning("run record not updated", { error_type: error instanceof Error ? error.name : "Error" });
      }),
      deps.lease.release(lease).catch(() => {}),
    ]);
    logger.info("run ended", { status, latency_ms: latencyMs });
    return status;
  });

  const registered = { interrupt: () => stop("interrupted"), done: done.then(() => undefined) };
  deps.runs.add(registered);
  void done.finally(() => deps.runs.delete(registered));
  return { runId, cancel: () => stop("cancelled"), done };
}

/** The tool calls of the last tool turn that have no result yet: they waited for a decision. */
function waitingCalls(history: readonly Message[]): { calls: ToolCall[]; reason: string } {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const answered = new Set(history.slice(i + 1).flatMap((r) => (r.role === "tool" ? [r.tool_call_id] : [])));
    return { calls: m.tool_calls.filter((c) => !answered.has(c.id)), reason: m.content };
  }
  return { calls: [], reason: "" };
}

/** This run's approvals, in the order they were asked, as the stream shows them. */
async function pendingApprovals(deps: Deps, runId: string): Promise<PublicApproval[]> {
  const ids = deps.pauses.approvalIds(runId);
  const records = await Promise.all(ids.map((id) => deps.store.getApproval(id)));
  return records.flatMap((r) => (r ? [publicApproval(r)] : []));
}

/** A resumed run acts on the words of the request that paused it. */
function lastUserWords(history: readonly Message[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.role === "user") return history[i]!.content;
  return undefined;
}

function mentionCheck(words: string | undefined): (value: string) => boolean {
  const haystack = (words ?? "").toLowerCase();
  return (value) => value.trim() !== "" && haystack.includes(value.trim().toLowerCase());
}

function errorEvent(code: SseErrorCode, message: string, errorId: string, runId: string): RunEvent {
  return { type: "error", code, message, error_id: errorId, run_id: runId };
}

function detailOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
