/**
 * The A2A JSON-RPC methods (spec 4.5, 3.3, 7.3), framework-free: `handle` takes a parsed request
 * and the caller and returns a JSON-RPC body or a stream of JSON-RPC bodies. Tasks wrap runs:
 * `contextId` is the chat thread, a gated run leaves the task input-required, and a decision sent
 * as a data part resumes it. http/routes/a2a.ts binds this to Hono.
 */
import type { RunEvent } from "../agent/events.js";
import { outcomeCollector, type RunOutcome } from "../agent/outcome.js";
import type { RunHandle, Runs } from "../runs/index.js";
import type { Caller } from "../auth/caller.js";
import { refusalToDecide } from "../approvals/decide.js";
import type { ApprovalRecord } from "../approvals/types.js";
import { isoTime } from "../clock.js";
import { isRefusal, type RefusalCode } from "../errors.js";
import { codePointLength, type JsonValue } from "../json.js";
import type { Logger } from "../observability/logger.js";
import type { Settings } from "../settings/parse.js";
import type { Clock } from "../clock.js";
import type { Ids } from "../ids.js";
import type { Store } from "../store/ports.js";
import { type A2AVersion, ERR, METHODS_V03, parseRequest, type RpcRequest, RpcError, rpcError, rpcResult } from "./jsonrpc.js";
import type { TaskPart, TaskRecord } from "./types.js";
import { artifactUpdate, type IncomingMessage, readMessage, sendResult, statusUpdate, TERMINAL, taskSnapshot, wireTask } from "./wire.js";

export const ORIGIN_EXTENSION_URI = "urn:agent-service:a2a:origin:v1";

export type A2AReply = { readonly kind: "json"; readonly body: Record<string, JsonValue> } | { readonly kind: "stream"; readonly events: AsyncIterable<Record<string, JsonValue>> };

interface Ctx {
  readonly caller: Caller;
  readonly version: A2AVersion;
  readonly logger: Logger;
}

/** Runs of this process by task id: cancel and subscribe reach them here. */
interface LiveTask {
  run: RunHandle | undefined;
  /**
   * Resolves with the stored final task; rejects when the run could not start (its caller has
   * the error). Made with the entry: a subscriber that arrives before the run starts waits on it.
   */
  readonly done: Promise<TaskRecord>;
  listeners: Set<(event: Record<string, JsonValue> | null, task: TaskRecord) => void>;
  canceled: boolean;
}

/** What the A2A service works with. */
export interface A2ADeps {
  readonly settings: Settings;
  readonly store: Store;
  readonly runs: Runs;
  readonly clock: Clock;
  readonly ids: Ids;
  /** Names this process on the tasks it runs (subscribe and cancel reach only its own runs). */
  readonly instanceId: string;
}

/** How a refusal of the domain reads in a failed task's error data part (spec 4.5). */
const A2A_CODE: Record<RefusalCode, string> = {
  forbidden: "forbidden",
  thread_foreign: "forbidden",
  not_found: "run_failed",
  thread_busy: "thread_busy",
  approval_pending: "approval_pending",
  approval_not_found: "approval_not_found",
  not_an_approver: "not_an_approver",
  approval_direct_only: "approval_direct_only",
  approval_not_pending: "approval_not_pending",
  approval_expired: "approval_expired",
  approval_digest_mismatch: "approval_digest_mismatch",
};

export function createA2AService(deps: A2ADeps) {
  const live = new Map<string, LiveTask>();
  const now = () => isoTime(deps.clock.now());

  /** Subject and agent own a task; the user calling directly also owns what their agents created. */
  const owns = (caller: Caller, t: TaskRecord, agentOnly = false) => {
    if (t.owner !== caller.hash) return false;
    const actor = caller.principal.actor?.id ?? null;
    if (actor !== null) return t.actor === actor;
    return !agentOnly || t.actor === null;
  };

  const loadTask = async (ctx: Ctx, id: JsonValue | undefined, agentOnly = false): Promise<TaskRecord> => {
    if (typeof id !== "string" || id === "") throw new RpcError(ERR.invalidParams, "Invalid params: id is required");
    const t = await deps.store.getTask(id);
    if (!t || !owns(ctx.caller, t, agentOnly)) throw new RpcError(ERR.taskNotFound, "Task not found");
    return t;
  };

  async function handle(body: unknown, ctx: Ctx): Promise<A2AReply> {
    let req: RpcRequest;
    try {
      req = parseRequest(body);
    } catch (error) {
      const e = error as RpcError;
      return { kind: "json", body: rpcError(null, e.rpcCode, e.message) };
    }
    const method = ctx.version === "1.0" ? req.method : (METHODS_V03[req.method] ?? `v03:${req.method}`);
    try {
      switch (method) {
        case "SendMessage":
          return { kind: "json", body: rpcResult(req.id, await send(req, ctx)) };
        case "SendStreamingMessage":
          return { kind: "stream", events: await sendStreaming(req, ctx) };
        case "GetTask":
          return { kind: "json", body: rpcResult(req.id, wireTask(await loadTask(ctx, req.params.id), ctx.version)) };
        case "ListTasks":
          return { kind: "json", body: rpcResult(req.id, await list(req, ctx)) };
        case "CancelTask":
          return { kind: "json", body: rpcResult(req.id, wireTask(await cancel(req, ctx), ctx.version)) };
        case "SubscribeToTask":
          return { kind: "stream", events: await subscribe(req, ctx) };
        default:
          return { kind: "json", body: rpcError(req.id, ERR.methodNotFound, "Method not found") };
      }
    } catch (error) {
      if (error instanceof RpcError) return { kind: "json", body: rpcError(req.id, error.rpcCode, error.message, error.data) };
      throw error;
    }
  }

  // ---- sending ---------------------------------------------------------------------------------

  interface Started {
    task: TaskRecord;
    /** Resolves with the final task once the run has ended and the task is stored. */
    done: Promise<TaskRecord>;
  }

  async function send(req: RpcRequest, ctx: Ctx): Promise<Record<string, JsonValue>> {
    const started = await start(req, ctx);
    return sendResult(await started.done, ctx.version);
  }

  async function sendStreaming(req: RpcRequest, ctx: Ctx): Promise<AsyncIterable<Record<string, JsonValue>>> {
    const queue = new EventQueue();
    const started = await start(req, ctx, (event, task) => queue.push(event === null ? null : rpcResult(req.id, event), task));
    // The snapshot leads even if the run's first pieces arrived while the task was being stored.
    queue.lead(rpcResult(req.id, taskSnapshot(started.task, ctx.version)));
    void started.done.then(
      (task) => {
        queue.push(rpcResult(req.id, statusUpdate(task, ctx.version)), task);
        queue.end();
      },
      () => queue.end(),
    );
    return queue;
  }

  /** Starts the work a message asks for: a new run, or a decision that resumes one. */
  async function start(req: RpcRequest, ctx: Ctx, onEvent?: (event: Record<string, JsonValue> | null, task: TaskRecord) => void): Promise<Started> {
    const msg = readMessage(req.params);
    if (!msg) throw new RpcError(ERR.invalidParams, "Invalid params: params.message with parts is required");
    const decision = msg.data.find((d) => typeof d.approval_id === "string");
    if (decision) return decide(msg, decision, ctx, onEvent);
    if (msg.textParts === 0 || msg.emptyText || msg.text.trim() === "") throw new RpcError(ERR.invalidParams, "Invalid params: the message needs text");
    if (codePointLength(msg.text) > deps.settings.MAX_MESSAGE_CHARS) throw new RpcError(ERR.invalidParams, "Invalid params: the message is longer than MAX_MESSAGE_CHARS");
    if (!msg.text.isWellFormed()) throw new RpcError(ERR.invalidParams, "Invalid params: the message is not valid Unicode");

    let contextId = msg.contextId;
    if (msg.taskId) {
      // Continuing a task stays with the agent that created it (the person continues by contextId).
      const existing = await loadTask(ctx, msg.taskId, true);
      if (TERMINAL.has(existing.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
      contextId = existing.context_id;
    }
    const origin = readOrigin(ctx.caller, msg);
    const task = await newTask(ctx.caller, contextId ?? deps.ids.threadId());
    if (origin.tooDeep) return failNow(task, "delegation_too_deep", "delegation chain too deep");
    const note =
      ctx.caller.principal.actor && deps.settings.A2A_CALLER_NOTE === "on"
        ? `Another agent (${ctx.caller.principal.actor.id}) wrote this request on behalf of the user.${origin.text ? ` The user's own words, as that agent forwarded them: ${JSON.stringify(origin.text)}` : ""}`
        : undefined;
    const mentions = deps.settings.A2A_DELEGATED_MENTIONS;
    const userWords = !ctx.caller.principal.actor ? msg.text : mentions === "request" ? msg.text : mentions === "origin" ? (origin.text ?? "") : "";
    return runInTask(task, ctx, onEvent, (emit) =>
      deps.runs.startTurn({ caller: ctx.caller, threadId: task.context_id, message: msg.text, metadata: {}, emit, logger: ctx.logger, userWords, ...(note ? { systemNote: note } : {}) }),
    );
  }

  async function newTask(caller: Caller, contextId: string): Promise<TaskRecord> {
    const at = now();
    const task: TaskRecord = {
      task_id: deps.ids.runId(),
      context_id: contextId,
      owner: caller.hash,
      actor: caller.principal.actor?.id ?? null,
      state: "working",
      status_parts: [],
      artifacts: [],
      approval_ids: [],
      run_id: null,
      instance_id: deps.instanceId,
      created_at: at,
      updated_at: at,
    };
    // The task's context is a thread: make sure the row exists (the run claims it properly).
    await deps.store.createThread({ thread_id: contextId, owner: caller.hash, actor: task.actor, created_at: at, updated_at: at });
    await deps.store.createTask(task);
    return task;
  }

  async function failNow(task: TaskRecord, code: string, text: string): Promise<Started> {
    const failed = await update(task, { state: "failed", status_parts: [{ kind: "text", text }, { kind: "data", data: { type: "error", code } }] });
    return { task: failed, done: Promise.resolve(failed) };
  }

  async function update(task: TaskRecord, patch: Partial<TaskRecord>): Promise<TaskRecord> {
    const next = { ...task, ...patch, updated_at: now() };
    await deps.store.updateTask(task.task_id, { ...patch, updated_at: next.updated_at });
    return next;
  }

  /** Runs `begin` for the task: streams its events as A2A updates and stores its outcome. */
  async function runInTask(
    task: TaskRecord,
    ctx: Ctx,
    onEvent: ((event: Record<string, JsonValue> | null, task: TaskRecord) => void) | undefined,
    /** Starts the run, or answers the task as it now stands when no run starts. */
    begin: (emit: (event: RunEvent) => void) => Promise<RunHandle | TaskRecord>,
  ): Promise<Started> {
    let resolve!: (final: TaskRecord) => void;
    let reject!: (error: unknown) => void;
    const entry: LiveTask = { run: undefined, done: new Promise((res, rej) => ((resolve = res), (reject = rej))), listeners: new Set(), canceled: false };
    void entry.done.catch(() => {});
    if (onEvent) entry.listeners.add(onEvent);
    live.set(task.task_id, entry);
    let started: Started;
    try {
      started = await startRun(task, ctx, entry, begin);
    } catch (error) {
      live.delete(task.task_id);
      reject(error);
      throw error;
    }
    // The entry leaves the registry when its final task is stored, however the run went.
    void started.done.then(
      (final) => {
        live.delete(task.task_id);
        resolve(final);
      },
      (error: unknown) => {
        live.delete(task.task_id);
        reject(error);
      },
    );
    return { task: started.task, done: entry.done };
  }

  async function startRun(task: TaskRecord, ctx: Ctx, entry: LiveTask, begin: (emit: (event: RunEvent) => void) => Promise<RunHandle | TaskRecord>): Promise<Started> {
    const collector = outcomeCollector();
    const artifactId = `${task.task_id}-response`;
    let held: string | undefined;
    let chunks = 0;
    const publish = (event: Record<string, JsonValue>) => {
      for (const l of entry.listeners) l(event, task);
    };
    const chunk = (text: string, last: boolean) => {
      publish(artifactUpdate(task, ctx.version, { artifactId, name: "response", parts: [{ kind: "text", text }] }, chunks > 0, last));
      chunks++;
    };
    const emit = (event: RunEvent) => {
      collector.observe(event);
      // Hold one piece back, so the last piece can be marked lastChunk.
      if (event.type === "message.delta") {
        if (held !== undefined) chunk(held, false);
        held = event.text;
      }
    };
    let run: RunHandle | TaskRecord;
    try {
      run = await begin(emit);
    } catch (error) {
      if (isRefusal(error)) return failNow(task, A2A_CODE[error.code], error.message);
      throw error;
    }
    if ("task_id" in run) return { task: run, done: Promise.resolve(run) };
    entry.run = run;
    const withRun = await update(task, { run_id: run.runId });
    const done = run.done.then(async () => {
      const outcome = collector.outcome();
      if (held !== undefined) chunk(held, true);
      return update(withRun, entry.canceled ? { state: "canceled", status_parts: [], run_id: null } : taskFields(outcome, artifactId));
    });
    return { task: withRun, done };
  }

  // ---- decisions over A2A -------------------------------------------------------------------

  async function decide(
    msg: IncomingMessage,
    d: Record<string, JsonValue>,
    ctx: Ctx,
    onEvent?: (event: Record<string, JsonValue> | null, task: TaskRecord) => void,
  ): Promise<Started> {
    const approvalId = String(d.approval_id);
    const decision = d.decision === "approve" || d.decision === "reject" ? d.decision : undefined;
    if (!decision) throw new RpcError(ERR.invalidParams, "Invalid params: decision must be approve or reject");
    if (d.comment !== undefined && (typeof d.comment !== "string" || codePointLength(d.comment) > 1000))
      throw new RpcError(ERR.invalidParams, "Invalid params: comment must be text of at most 1000 characters");
    if (d.digest !== undefined && (typeof d.digest !== "string" || d.digest.length > 80)) throw new RpcError(ERR.invalidParams, "Invalid params: digest is malformed");

    // On the task it decides (taskId), or on its context (contextId, the task in referenceTaskIds) as a new task.
    let task: TaskRecord;
    if (msg.taskId) task = await loadTask(ctx, msg.taskId, true);
    else {
      const ref = msg.referenceTaskIds[0];
      const referenced = ref ? await loadTask(ctx, ref) : undefined;
      const contextId = msg.contextId ?? referenced?.context_id;
      if (!contextId) throw new RpcError(ERR.invalidParams, "Invalid params: a decision names its task (taskId) or its context (contextId)");
      task = await newTask(ctx.caller, contextId);
    }
    const approval = await deps.store.getApproval(approvalId);
    const thread = approval ? await deps.store.getThread(approval.thread_id) : null;
    const refuse = async (code: string, text: string): Promise<Started> => {
      // A refused decision leaves a waiting task waiting, with a note; a new task fails.
      if (task.state === "input-required") {
        const kept = await update(task, { status_parts: [{ kind: "text", text }, { kind: "data", data: { type: "error", code } }, ...task.status_parts.filter((p) => p.kind === "data" && (p.data as { type?: string }).type === "approval_request")] });
        return { task: kept, done: Promise.resolve(kept) };
      }
      return failNow(task, code, text);
    };
    if (!approval || !thread || approval.thread_id !== task.context_id) return refuse("approval_not_found", "No such approval on this conversation.");
    // Over A2A only the requester decides; role approvers use HTTP.
    const refusal = refusalToDecide(ctx.caller, approval, thread);
    if (refusal) return refuse(refusal, refusal === "approval_direct_only" ? "The person decides this approval directly, not through an agent." : "Only the requester decides over A2A.");
    if (approval.requester !== ctx.caller.hash) return refuse("not_an_approver", "Only the requester decides over A2A.");
    let decided: ApprovalRecord;
    try {
      decided = await deps.runs.recordDecision(ctx.caller, thread, approvalId, {
        decision,
        ...(typeof d.comment === "string" ? { comment: d.comment } : {}),
        ...(typeof d.digest === "string" ? { digest: d.digest } : {}),
      });
    } catch (error) {
      if (isRefusal(error)) return refuse(A2A_CODE[error.code], error.message);
      throw error;
    }
    const working = await update(task, { state: "working", status_parts: [] });
    return runInTask(working, ctx, onEvent, async (emit) => {
      const outcome = await deps.runs.resumeAfterDecision(decided, { decider: ctx.caller, emit, logger: ctx.logger });
      if (outcome.kind === "started") return outcome.run;
      // Other approvals of the run still wait, or another request resumes it: the task waits,
      // listing this approval too, so it takes the outcome whichever route finishes the run.
      const pending = await deps.store.listApprovals({ run_id: decided.run_id, status: "pending", limit: 100, offset: 0 });
      const shown = pending.map((a) => ({ ...a, internal: undefined }) as unknown as Record<string, JsonValue>);
      return update(working, awaiting([decided.approval_id, ...pending.map((a) => a.approval_id)], shown));
    });
  }

  /** After a resumed run ends, every waiting task of the requester on that thread takes the outcome. */
  async function settle(approval: ApprovalRecord, outcome: RunOutcome): Promise<void> {
    for (const t of await deps.store.tasksWaitingOn(approval.thread_id, approval.approval_id)) {
      if (live.has(t.task_id)) continue;
      const fields = taskFields(outcome, `${t.task_id}-response`);
      const where: TaskPart = { kind: "text", text: `The run continued after the approval was decided (${outcome.runId ?? "run"}).` };
      await update(t, { ...fields, status_parts: [where, ...(fields.status_parts ?? [])] });
    }
  }

  // ---- reading, listing, cancelling, subscribing ------------------------------------------------

  async function list(req: RpcRequest, ctx: Ctx): Promise<Record<string, JsonValue>> {
    const p = req.params;
    const size = typeof p.pageSize === "number" && p.pageSize > 0 ? Math.min(100, Math.floor(p.pageSize)) : 50;
    const offset = typeof p.pageToken === "string" && /^\d+$/.test(p.pageToken) ? Number(p.pageToken) : 0;
    const actor = ctx.caller.principal.actor?.id;
    const tasks = await deps.store.listTasks({
      owner: ctx.caller.hash,
      ...(actor !== undefined ? { actor } : {}),
      ...(typeof p.contextId === "string" && p.contextId !== "" ? { context_id: p.contextId } : {}),
      limit: size + 1,
      offset,
    });
    const page = tasks.slice(0, size);
    return {
      tasks: page.map((t) => wireTask(t, ctx.version)),
      nextPageToken: tasks.length > size ? String(offset + size) : "",
      pageSize: size,
    };
  }

  async function cancel(req: RpcRequest, ctx: Ctx): Promise<TaskRecord> {
    const t = await loadTask(ctx, req.params.id);
    if (TERMINAL.has(t.state)) throw new RpcError(ERR.taskNotCancelable, "Task cannot be canceled");
    const entry = live.get(t.task_id);
    if (t.state === "working" && !entry) throw new RpcError(ERR.taskNotCancelable, "The task runs on another replica");
    if (entry) {
      entry.canceled = true;
      entry.run?.cancel();
    }
    return update(t, { state: "canceled", status_parts: [], run_id: null });
  }

  async function subscribe(req: RpcRequest, ctx: Ctx): Promise<AsyncIterable<Record<string, JsonValue>>> {
    const t = await loadTask(ctx, req.params.id, true);
    if (TERMINAL.has(t.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
    const entry = live.get(t.task_id);
    if (!entry) throw new RpcError(ERR.unsupportedOperation, "The task is not running in this process");
    const queue = new EventQueue();
    queue.push(rpcResult(req.id, taskSnapshot(t, ctx.version)), t);
    const listener = (event: Record<string, JsonValue> | null, task: TaskRecord) => queue.push(event === null ? null : rpcResult(req.id, event), task);
    entry.listeners.add(listener);
    void entry.done.then(
      (final) => {
        queue.push(rpcResult(req.id, statusUpdate(final, ctx.version)), final);
        queue.end();
      },
      () => queue.end(),
    );
    return queue;
  }

  // ---- helpers -------------------------------------------------------------------------------

  function taskFields(outcome: RunOutcome, artifactId: string): Partial<TaskRecord> {
    if (outcome.ended === "awaiting_approval")
      return awaiting(outcome.approvals.map((a) => a.approval_id), outcome.approvals as unknown as Record<string, JsonValue>[]);
    if (outcome.ended === "ok" || outcome.ended === "step_limit") {
      const parts: TaskPart[] = [{ kind: "text", text: outcome.text }];
      if (outcome.structured !== undefined) parts.push({ kind: "data", data: outcome.structured, mediaType: "application/json" });
      return { state: "completed", artifacts: [{ artifactId, name: "response", parts }], status_parts: [], approval_ids: [], run_id: null };
    }
    const code = outcome.errorCode ?? "run_failed";
    return { state: "failed", status_parts: [{ kind: "text", text: `The run failed (${code}).` }, { kind: "data", data: { type: "error", code } }], run_id: null };
  }

  function awaiting(ids: string[], approvals: Record<string, JsonValue>[]): Partial<TaskRecord> {
    const lines = approvals.map((a) => {
      const body = a.body === null || a.body === undefined ? "" : ` with body ${JSON.stringify(a.body).slice(0, 2000)}`;
      return `${String(a.method)} ${String(a.path)} on API ${String(a.api)}${body} waits for approval ${String(a.approval_id)}`;
    });
    return {
      state: "input-required",
      approval_ids: ids,
      run_id: null,
      status_parts: [
        { kind: "text", text: lines.join("\n") },
        { kind: "data", data: { type: "approval_request", approval: approvals[0] ?? null, approvals, approval_json: JSON.stringify(approvals[0] ?? null) } },
      ],
    };
  }

  /** The origin extension: read for delegated principals only, capped, never stored or traced. */
  function readOrigin(caller: Caller, msg: IncomingMessage): { text: string | undefined; tooDeep: boolean } {
    if (!caller.principal.actor) return { text: undefined, tooDeep: false };
    const ext = msg.metadata[ORIGIN_EXTENSION_URI];
    const origin = ext && typeof ext === "object" && !Array.isArray(ext) ? ext.origin : undefined;
    if (!origin || typeof origin !== "object" || Array.isArray(origin)) return { text: undefined, tooDeep: false };
    const hops = typeof origin.hops === "number" ? origin.hops : 0;
    if (hops > deps.settings.AUTH_MAX_DELEGATION_DEPTH) return { text: undefined, tooDeep: true };
    const text = typeof origin.text === "string" ? Array.from(origin.text).slice(0, deps.settings.A2A_ORIGIN_MAX_CHARS).join("") : undefined;
    return { text, tooDeep: false };
  }

  return { handle, settle };
}

/** A small async queue of JSON-RPC bodies for SSE. */
class EventQueue implements AsyncIterable<Record<string, JsonValue>> {
  private items: Record<string, JsonValue>[] = [];
  private done = false;
  private wake: (() => void) | undefined;
  push(item: Record<string, JsonValue> | null, _task?: TaskRecord): void {
    if (item === null || this.done) return;
    this.items.push(item);
    this.wake?.();
  }
  /** Puts the item before everything queued so far. */
  lead(item: Record<string, JsonValue>): void {
    if (this.done) return;
    this.items.unshift(item);
    this.wake?.();
  }
  end(): void {
    this.done = true;
    this.wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<Record<string, JsonValue>> {
    for (;;) {
      while (this.items.length > 0) yield this.items.shift()!;
      if (this.done) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

export type A2AService = ReturnType<typeof createA2AService>;
