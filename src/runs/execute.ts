/**
 * One run from its record to its end (spec 3.1): lease renewal, wall-clock timeout, cancellation,
 * the agent loop, and the final status in the record, the metrics and the end-of-run log line.
 * The transport (SSE, A2A) supplies `emit` and tells the run when its client is gone.
 */
import type { RunEvent, SseErrorCode, Usage } from "../agent/events.js";
import { HISTORY_CUT_NOTE, turnStartWindow, windowHistory } from "../agent/history.js";
import { closeOpenToolCalls, type LoopOptions, type LoopResult, runLoop, type StructuredAnswers } from "../agent/loop.js";
import type { Model } from "../agent/model.js";
import { publicApproval, type PublicApproval } from "../approvals/view.js";
import type { Caller } from "../auth/caller.js";
import { publicPrincipal } from "../auth/principal.js";
import { framingFor } from "./delegation.js";
import { readHistory } from "./history.js";
import { isoTime } from "../clock.js";
import { AppError, hasCode, isAppError, storeBusy } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import { errorDetail, providerErrorText } from "../observability/redact.js";
import type { ToolCallScope } from "../policy/client.js";
import { type ApiClient, noPolicyClient } from "../policy/types.js";
import type { LeaseHandle, Message, RunRecord, RunStatus, ToolCall } from "../store/ports.js";
import type { RunsContext } from "./context.js";
import type { ActiveRun } from "./registry.js";
import { endRunTrace, resumeDone, type RunTrace, startRunTrace } from "./trace.js";

/** Why a run was stopped from outside its loop. */
type StopKind = "timeout" | "cancelled" | "interrupted" | "lease_lost";

/** The step limit was hit and the closing reply could not be written (SSE `recursion_limit`). */
class ClosingReplyLost extends AppError {
  constructor(options: { cause: unknown }) {
    super("recursion_limit", "The step limit was reached and the closing reply could not be written.", options);
    this.name = "ClosingReplyLost";
  }
}

class RunStopped extends Error {
  constructor(readonly kind: StopKind) {
    super(`run ${kind}`);
    this.name = "RunStopped";
  }
}

/** The run record's error_type when the store stopped answering (any adapter). */
export const DATABASE_UNAVAILABLE = "DatabaseUnavailable";

/** A run resumed after the decisions on a paused run: the tool calls that waited run first. */
export interface ResumeOf {
  readonly approvalId: string;
  readonly decision: "approve" | "reject" | "expired";
  readonly pausedRunId: string;
  /** The API of the decided call (the resume span names it). */
  readonly api?: string;
  /** The paused run's span as a traceparent, kept with its approval: the resumed run links to it. */
  readonly pausedTrace?: string | undefined;
}

export interface RunInput {
  readonly caller: Caller;
  readonly threadId: string;
  /** The user's message; absent when the run resumes after an approval decision. */
  readonly message?: string;
  readonly resume?: ResumeOf;
  readonly metadata: RunRecord["metadata"];
  readonly lease: LeaseHandle;
  readonly emit: (event: RunEvent) => void;
  /** The request's logger (request id, principal hash, actor already bound). */
  readonly logger: Logger;
  /** The thread was created for this run: it has no history to read. */
  readonly freshThread?: boolean;
  /** The user's own words as a calling agent forwarded them (A2A's origin extension), if any. */
  readonly origin?: string | undefined;
  /** Made (and written with the thread's claim) before the run started: see openRun. */
  readonly opening?: RunOpening;
  /** The span of the request that started the run (or decided what it resumes): its trace parent. */
  readonly span?: TraceSpan | undefined;
}

/** What a run writes first: its record and, on a thread made for it, the user message. */
export interface RunOpening {
  readonly runId: string;
  readonly record: RunRecord;
  readonly firstMessage: Message | undefined;
  /** Already stored (with the thread's claim): executeRun does not write them again. */
  readonly recorded: boolean;
}

type OpeningInput = Pick<RunInput, "caller" | "threadId" | "message" | "resume" | "metadata" | "freshThread">;

/** A new run's usage in its record (shared: a record is replaced, never changed in place). */
const NO_USAGE: Usage = Object.freeze({ input_tokens: 0, output_tokens: 0 });

export function openRun(ctx: Pick<RunsContext, "ids" | "clock">, input: OpeningInput): RunOpening {
  const runId = ctx.ids.runId();
  const at = isoTime(ctx.clock.now());
  // On a thread made for this run the user message needs no history: it is written with the record.
  const firstMessage: Message | undefined =
    input.freshThread && !input.resume ? { id: ctx.ids.messageId(), role: "user", content: input.message ?? "" } : undefined;
  const record: RunRecord = {
    run_id: runId,
    thread_id: input.threadId,
    status: "running",
    error_type: null,
    error_id: null,
    principal_hash: input.caller.hash,
    actor: input.caller.principal.actor?.id ?? null,
    metadata: input.metadata,
    usage: NO_USAGE,
    created_at: at,
    updated_at: at,
    ended_at: null,
    latency_ms: null,
    resumed_from: input.resume?.pausedRunId ?? null,
    resumed_by: null,
  };
  return { runId, record, firstMessage, recorded: false };
}

export interface RunHandle {
  readonly runId: string;
  /** The client went away: the run stops as `cancelled`. */
  cancel(): void;
  /** Resolves with the final status once everything is written and the lease released. */
  readonly done: Promise<RunStatus>;
}

interface Ending {
  readonly status: RunStatus;
  readonly errorType: string | null;
  readonly errorId: string | null;
  /** The error's message, for the run's span (exported only under TRACE_CAPTURE=full). */
  readonly errorMessage?: string;
}

/**
 * A run in progress: what its steps share, its stop, its timer (wall clock and lease renewal)
 * and its end. One object is the run's handle, its entry in the registry and what its steps
 * read: ten thousand waiting runs each hold one, rather than a dozen closures and the objects
 * they close over.
 */
class LiveRun implements RunHandle, ActiveRun {
  readonly logger: Logger;
  /** Why the run stopped (cancelled, timed out, interrupted, lease lost); undefined while it goes on. */
  stopped: RunStopped | undefined;
  /**
   * Made when something asks for the run's signal (a model's request, a tool, a sleep): a run
   * that never hands one out (a refusal, an instant answer) makes none. Node's AbortSignal costs
   * more to make than the rest of such a run's bookkeeping.
   */
  private controller: AbortController | undefined;
  /** performance.now() when the run started. */
  readonly started = performance.now();
  readonly usage: Usage = { input_tokens: 0, output_tokens: 0 };
  /** The final record and the lease's release were written with the last answer. */
  finished = false;
  /** Its spans, while tracing is on. */
  readonly trace: RunTrace | undefined;
  readonly done: Promise<RunStatus>;
  private readonly deadline: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The timer repeats every renewal period (an interval) while the deadline is further off. */
  private repeating = false;
  /** When the lease was last confirmed: the run started with it just taken, then each renewal. */
  private leaseFrom: number;

  constructor(
    private readonly ctx: RunsContext,
    private readonly input: RunInput,
    readonly runId: string,
    firstMessage: Message | undefined,
  ) {
    this.logger = input.logger.child({ run_id: runId, thread_id: input.threadId });
    this.trace = startRunTrace(ctx.tracing, runId, input);
    this.deadline = this.started + ctx.limits.runTimeoutS * 1000;
    this.leaseFrom = this.started;
    this.schedule(this.started);
    // One chain from the run to its end (each handler a waiting run holds costs memory): the
    // registry lets go of the run once everything is written.
    this.done = drive(ctx, input, this, firstMessage).then((ending) => this.end(ending));
    ctx.registry.add(this);
  }

  /** Aborted once the run stops. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.stopped);
    }
    return this.controller.signal;
  }

  /** Throws why the run stopped, as `signal.throwIfAborted()` would, without making the signal. */
  throwIfStopped(): void {
    if (this.stopped) throw this.stopped;
  }

  stop(kind: StopKind): void {
    if (this.stopped) return;
    this.stopped = new RunStopped(kind);
    this.controller?.abort(this.stopped);
  }

  cancel(): void {
    this.stop("cancelled");
  }

  interrupt(): void {
    this.stop("interrupted");
  }

  /**
   * The run's one timer serves both the wall clock and the lease renewal. A renewal that fails or
   * finds the lease gone stops the run before it writes again (spec 8).
   */
  watch(): void {
    const now = performance.now();
    if (now >= this.deadline) return this.stop("timeout");
    const { renewMs } = this.ctx.leases.timings;
    if (now - this.started >= renewMs) this.renew(now);
    this.schedule(now);
  }

  /** Renews the lease, asked at `now`; a lease kept in this process answers at once, without a promise. */
  private renew(now: number): void {
    let held: Promise<boolean> | boolean;
    try {
      held = this.ctx.leases.renew(this.input.lease);
    } catch {
      held = false;
    }
    if (typeof held === "boolean") this.renewed(held, now);
    else
      held.then(
        (ok) => this.renewed(ok, now),
        () => this.stop("lease_lost"),
      );
  }

  private renewed(held: boolean, asked: number): void {
    if (held) this.leaseFrom = asked;
    else this.stop("lease_lost");
  }

  /**
   * The lease is held by the run's own clock: less than its time has passed since it was last
   * confirmed (counted from when the renewal was asked for). A process that stalled longer (a
   * stopped or starved event loop) has not confirmed it, whatever its timers would say next.
   */
  holdsLease(): boolean {
    return performance.now() - this.leaseFrom < this.ctx.leases.timings.ttlMs;
  }

  /**
   * The next look at the run: after a renewal period, or at the deadline when that comes first.
   * With repeating timers (the Node entry) one interval serves every period while the deadline is
   * further off, then one timeout for what is left: not a new timeout every period, which on V8
   * lives long enough to reach the old generation, where ten thousand waiting runs' timeouts
   * pile up between major collections.
   */
  private schedule(now: number): void {
    const left = this.deadline - now;
    if (!this.ctx.limits.repeatingTimer) {
      this.timer = setTimeout(watchRun, Math.min(this.ctx.leases.timings.renewMs, left), this);
      return;
    }
    if (left > this.ctx.leases.timings.renewMs) {
      if (!this.repeating) {
        this.timer = setInterval(watchRun, this.ctx.leases.timings.renewMs, this);
        this.repeating = true;
      }
      return;
    }
    this.clearTimer();
    this.timer = setTimeout(watchRun, left, this);
  }

  private clearTimer(): void {
    if (this.repeating) clearInterval(this.timer);
    else clearTimeout(this.timer);
    this.repeating = false;
  }

  private async end(ending: Ending): Promise<RunStatus> {
    this.clearTimer();
    try {
      return await close(this.ctx, this.input.lease, this, ending);
    } finally {
      this.ctx.registry.delete(this);
    }
  }
}

/** The run's timer (its argument, not a closure: nothing more per run). */
function watchRun(run: LiveRun): void {
  run.watch();
}

export async function executeRun(ctx: RunsContext, input: RunInput): Promise<RunHandle> {
  const opening = input.opening ?? openRun(ctx, input);
  if (!opening.recorded)
    await ctx.store.createRun(opening.record, opening.firstMessage ? { messages: [opening.firstMessage], at: opening.record.created_at, fence: input.lease } : undefined);
  ctx.metrics.activeRuns.inc();
  return new LiveRun(ctx, input, opening.runId, opening.firstMessage);
}

/**
 * The run itself: its stream from message.start to message.end (or its error event). Kept
 * small: a run waiting on its model holds this function's frame, so what comes before the loop
 * and after it are functions of their own.
 */
async function drive(ctx: RunsContext, input: RunInput, run: LiveRun, firstMessage: Message | undefined): Promise<Ending> {
  input.emit(startEvent(input, run.runId));
  try {
    const options = await prepare(ctx, input, run, firstMessage);
    return await settle(ctx, input, run, options.messages, await runLoop(options));
  } catch (error) {
    return failed(ctx, error, run.stopped, { emit: input.emit, logger: run.logger, runId: run.runId });
  }
}

function startEvent(input: RunInput, runId: string): RunEvent {
  return {
    type: "message.start",
    thread_id: input.threadId,
    run_id: runId,
    ...(input.resume ? { approval_id: input.resume.approvalId, decision: input.resume.decision } : {}),
  };
}

/** The conversation the model starts from, and what the loop is given. */
async function prepare(ctx: RunsContext, input: RunInput, run: LiveRun, firstMessage: Message | undefined): Promise<LoopOptions> {
  const { messages, cut, resume } = await conversation(ctx, input, firstMessage, (batch) => persistFor(ctx, input, run, batch), run.logger);
  // A resumed run acts on the words of the request that paused it.
  const request = input.message ?? lastUserWords(messages) ?? "";
  const framing = framingFor(input.caller, ctx.limits.delegation, request, input.origin);
  const systemNote = [framing.systemNote, cut ? HISTORY_CUT_NOTE : undefined].filter(Boolean).join("\n\n");
  const model = ctx.agent.model();
  const system = systemNote ? `${ctx.agent.system}\n\n${systemNote}` : ctx.agent.system;
  return new LoopInput(ctx, input, run, { model, system, messages, request, userWords: framing.userWords, resume });
}

/** Appends to the thread under the run's lease; a stopped run writes nothing more (a lost lease may already belong to another run). */
async function persistFor(ctx: RunsContext, input: RunInput, run: LiveRun, batch: readonly Message[]): Promise<void> {
  run.throwIfStopped();
  await ctx.store.appendMessages(input.threadId, batch, isoTime(ctx.clock.now()), input.lease);
}

/**
 * What the loop is given. A class rather than an object of closures: a run waiting on its model
 * holds it, and what only tool calls need (the tool context, the policy client) is made at the
 * first tool call.
 */
class LoopInput implements LoopOptions {
  readonly model: Model;
  readonly system: string;
  readonly tools: LoopOptions["tools"];
  readonly recursionLimit: number;
  readonly dev: boolean;
  readonly ids: LoopOptions["ids"];
  readonly logger: Logger;
  readonly messages: Message[];
  readonly emit: LoopOptions["emit"];
  readonly trace: RunTrace | undefined;
  readonly structured: StructuredAnswers | undefined;
  readonly resume: LoopOptions["resume"];
  private readonly request: string;
  private readonly userWords: string | undefined;
  private context: LoopOptions["toolContext"] | undefined;
  private calls: ((call: ToolCallScope) => ApiClient) | undefined;

  constructor(
    private readonly ctx: RunsContext,
    private readonly input: RunInput,
    private readonly run: LiveRun,
    made: { model: Model; system: string; messages: Message[]; request: string; userWords: string | undefined; resume: { calls: ToolCall[]; reason: string } | undefined },
  ) {
    this.model = made.model;
    this.system = made.system;
    this.tools = ctx.agent.tools;
    this.recursionLimit = ctx.limits.recursionLimit;
    this.dev = ctx.limits.dev;
    this.ids = ctx.ids;
    this.logger = run.logger;
    this.messages = made.messages;
    this.emit = input.emit;
    this.trace = run.trace;
    this.structured = structuredFor(ctx, made.model.structuredOutput);
    this.request = made.request;
    this.userWords = made.userWords;
    this.resume = made.resume
      ? {
          ...made.resume,
          // The waiting calls are carried out and their results written: only now is the
          // paused run resumed for good. A run cut before this leaves it due, and the next
          // holder of the thread (or the recovery sweep) resumes it again.
          done: async () => {
            await ctx.store.markResumed(input.resume!.pausedRunId, run.runId);
            resumeDone(run.trace);
          },
        }
      : undefined;
  }

  /** The run's signal, made on first use. */
  get signal(): AbortSignal {
    return this.run.signal;
  }

  throwIfStopped(): void {
    this.run.throwIfStopped();
  }

  persist(batch: readonly Message[]): Promise<void> {
    return persistFor(this.ctx, this.input, this.run, batch);
  }

  isPaused(toolCallId: string): boolean {
    return this.ctx.pauses.isPaused(this.run.runId, toolCallId);
  }

  get toolContext(): LoopOptions["toolContext"] {
    const { caller, threadId } = this.input;
    return (this.context ??= { principal: publicPrincipal(caller.principal), threadId, runId: this.run.runId, userMentioned: mentionCheck(this.userWords) });
  }

  /** The policy client of one tool call; the run's client is made at its first call. */
  apiFor(call: ToolCallScope): ApiClient {
    if (!this.calls) {
      const client = this.ctx.agent.policyClient;
      if (!client) return noPolicyClient;
      const { caller, threadId, resume, origin } = this.input;
      const { runId, logger, trace } = this.run;
      this.calls = client.forRun({
        threadId,
        runId,
        principal: caller.principal,
        signal: this.run.signal,
        logger,
        resumed: resume !== undefined,
        originWords: caller.principal.actor ? origin : this.request,
        span: trace?.run,
        holdsLease: () => this.run.holdsLease(),
      });
    }
    return this.calls(call);
  }
}

/** After the loop: the last answer with the run's end, then message.end. */
async function settle(ctx: RunsContext, input: RunInput, run: LiveRun, messages: readonly Message[], result: LoopResult): Promise<Ending> {
  const { store, clock } = ctx;
  const { threadId, lease, emit } = input;
  const { runId, started, usage } = run;
  Object.assign(usage, result.usage);
  // The last answer, the final record and the lease's release are one write; the stream's
  // message.end follows it, so a reader who sees it finds the answer stored.
  if (result.final && result.final.length > 0) {
    run.throwIfStopped();
    const at = isoTime(clock.now());
    const latency = Math.round(performance.now() - started);
    const end = { status: result.status, error_type: null, error_id: null, usage, updated_at: at, ended_at: at, latency_ms: latency };
    await store.finishRun(runId, end, { messages: result.final, at }, lease, ctx.leases.port).catch((error: unknown) => {
      // Spec 7.2: the step limit was hit and its closing reply could not be written.
      if (result.status === "step_limit" && !hasCode(error, "lease_lost")) throw new ClosingReplyLost({ cause: error });
      throw error;
    });
    run.finished = true;
  }
  const waiting = result.status === "awaiting_approval" ? await pendingApprovals(ctx, runId, messages) : [];
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
}

/** After the run: metrics, the final record and the lease (unless written with the answer), the log line. */
async function close(ctx: RunsContext, lease: LeaseHandle, run: LiveRun, ending: Ending): Promise<RunStatus> {
  const { status, errorType, errorId } = ending;
  const { metrics, store } = ctx;
  const { usage, logger } = run;
  const latencyMs = Math.round(performance.now() - run.started);
  metrics.activeRuns.dec();
  metrics.runs.inc({ status });
  metrics.runDuration.observe(latencyMs / 1000);
  metrics.tokens.inc({ kind: "input" }, usage.input_tokens);
  metrics.tokens.inc({ kind: "output" }, usage.output_tokens);
  const endedAt = isoTime(ctx.clock.now());
  ctx.pauses.forget(run.runId);
  // The record and the lease are independent: written side by side.
  if (!run.finished)
    await Promise.all([
      store.updateRun(run.runId, { status, error_type: errorType, error_id: errorId, usage, updated_at: endedAt, ended_at: endedAt, latency_ms: latencyMs }).catch((error: unknown) => {
        logger.warning("run record not updated", { error_type: error instanceof Error ? error.name : "Error" });
      }),
      ctx.leases.release(lease),
    ]);
  logger.info("run ended", { status, latency_ms: latencyMs });
  endRunTrace(run.trace, ending, usage);
  return status;
}

/** The messages the model starts from, and the calls a resumed run carries out first. */
async function conversation(
  ctx: RunsContext,
  input: RunInput,
  firstMessage: Message | undefined,
  persist: (batch: readonly Message[]) => Promise<void>,
  logger: Logger,
): Promise<{ messages: Message[]; cut: boolean; resume: { calls: ToolCall[]; reason: string } | undefined }> {
  if (firstMessage) return { messages: [firstMessage], cut: false, resume: undefined };
  const budget = ctx.limits.historyTokens;
  const resumed = input.resume !== undefined;
  const { messages: history, whole } = input.freshThread ? { messages: [], whole: true } : await readHistory(ctx.store, input.threadId, budget, resumed);
  const window = (messages: readonly Message[], choose = windowHistory) => {
    const w = choose(messages, budget, whole);
    return { messages: w.messages, cut: w.cut || !whole };
  };
  // A resumed run goes on with its turn: the older turns it started with, however far the turn grew.
  if (resumed) return { ...window(history, turnStartWindow), resume: waitingCalls(history) };
  const repairs = closeOpenToolCalls(history, ctx.ids, logger);
  const user: Message = { id: ctx.ids.messageId(), role: "user", content: input.message ?? "" };
  await persist([...repairs, user]);
  return { ...window([...history, ...repairs, user]), resume: undefined };
}

function structuredFor(ctx: RunsContext, modelCanStructure: boolean | undefined): StructuredAnswers | undefined {
  const rs = ctx.agent.responseSchema;
  if (!rs) return undefined;
  const strategy = rs.strategy === "tool" || (rs.strategy === "auto" && !modelCanStructure) ? "tool" : "provider";
  return { schema: rs.schema, checker: rs.checker, strategy };
}

/** How a run that threw ends: its status, the error event its stream gets, the log line. */
function failed(
  ctx: RunsContext,
  error: unknown,
  stopped: RunStopped | undefined,
  { emit, logger, runId }: { emit: (event: RunEvent) => void; logger: Logger; runId: string },
): Ending {
  if (stopped?.kind === "cancelled" || stopped?.kind === "interrupted") return { status: stopped.kind, errorType: null, errorId: null };
  const errorId = ctx.ids.errorId();
  const dev = ctx.limits.dev;
  // Every error event names its reference, and under dev carries the detail logged under it (spec 6.1, 7.2).
  const fail = (code: SseErrorCode, message: string, detail: string) =>
    emit({ ...errorEvent(code, `${message} Reference: ${errorId}.`, errorId, runId), ...(dev ? { detail } : {}) });
  if (stopped?.kind === "lease_lost" || hasCode(error, "lease_lost")) {
    // Another run may hold the thread now: this one stops without writing again (spec 8), and
    // says so (7.2 unavailable: it could no longer confirm it was the only run on the thread).
    logger.warning("run stopped: the thread's lease was lost", { error_id: errorId });
    fail("unavailable", "The run could no longer confirm it was the only run on the thread.", "LeaseLost: the thread's lease was lost");
    return { status: "interrupted", errorType: "LeaseLost", errorId };
  }
  if (hasCode(error, "unavailable")) {
    const busy = storeBusy(error);
    logger.warning(busy ? "run failed: database busy" : "run failed: database unreachable", { error_id: errorId });
    fail("unavailable", busy ? "The database is busy." : "The database is unreachable.", detailOf(error));
    // One name whatever the store: a resumed run that ends so is tried again (resume.ts gaveUp).
    return { status: "error", errorType: DATABASE_UNAVAILABLE, errorId };
  }
  if (hasCode(error, "recursion_limit")) {
    logger.warning("the closing reply of a run at its step limit was not written", { error_id: errorId, ...errorDetail((error as Error).cause) });
    fail("recursion_limit", "The run reached its step limit and its closing reply could not be saved.", detailOf((error as Error).cause ?? error));
    return { status: "step_limit", errorType: (error as Error).name, errorId };
  }
  if (hasCode(error, "invalid_structured_response")) {
    logger.warning("no answer fitted the response schema", { error_id: errorId });
    fail("invalid_structured_response", "No answer fitted the response schema.", detailOf(error));
    return { status: "error", errorType: (error as Error).name, errorId };
  }
  if (stopped?.kind === "timeout") {
    logger.warning("run stopped: it passed RUN_TIMEOUT_S", { error_id: errorId, run_timeout_s: ctx.limits.runTimeoutS });
    fail("timeout", "The run took longer than RUN_TIMEOUT_S and was stopped.", `Timeout: the run passed RUN_TIMEOUT_S (${ctx.limits.runTimeoutS} s)`);
    return { status: "timeout", errorType: "Timeout", errorId };
  }
  const errorType = error instanceof Error ? error.name : "Error";
  // The message and its cause, secrets masked, under the error id: what an operator needs to act.
  logger.error("run failed", { error_id: errorId, error_type: errorType, ...errorDetail(error) });
  // A model provider's own text may quote the request (the user's words): DEBUG only (spec 6.3).
  const providerText = providerErrorText(error);
  if (providerText !== undefined) logger.debug("run failed: the model provider's error", { error_id: errorId, cause: providerText });
  // A configuration error names the missing setting (never a value), so the caller can act on it.
  const message = isAppError(error) && error.code === "configuration" ? `${error.message} Reference: ${errorId}.` : `The run failed. Reference: ${errorId}.`;
  emit({ ...errorEvent("run_failed", message, errorId, runId), ...(dev ? { detail: detailOf(error) } : {}) });
  return { status: "error", errorType, errorId, ...(error instanceof Error ? { errorMessage: error.message } : {}) };
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

/**
 * This run's approvals as the stream shows them, in the order of the tool calls that asked for
 * them (parallel calls reach the gate in whatever order their digests finish).
 */
async function pendingApprovals(ctx: RunsContext, runId: string, history: readonly Message[]): Promise<PublicApproval[]> {
  const ids = ctx.pauses.approvalIds(runId);
  const records = (await Promise.all(ids.map((id) => ctx.store.getApproval(id)))).flatMap((r) => (r ? [r] : []));
  const order = new Map(waitingCalls(history).calls.map((c, i) => [c.id, i]));
  const rank = (r: (typeof records)[number]) => order.get(r.internal.tool_call_id) ?? order.size;
  return records.map((r, i) => ({ r, i })).sort((a, b) => rank(a.r) - rank(b.r) || a.i - b.i).map(({ r }) => publicApproval(r));
}

/** A resumed run acts on the words of the request that paused it. */
function lastUserWords(history: readonly Message[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.role === "user") return history[i]!.content;
  return undefined;
}

/** Whether the user's words mention a value; the lower-cased words are made at the first question, if any. */
function mentionCheck(words: string | undefined): (value: string) => boolean {
  let haystack: string | undefined;
  return (value) => value.trim() !== "" && (haystack ??= (words ?? "").toLowerCase()).includes(value.trim().toLowerCase());
}

function errorEvent(code: SseErrorCode, message: string, errorId: string, runId: string): RunEvent {
  return { type: "error", code, message, error_id: errorId, run_id: runId };
}

function detailOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
