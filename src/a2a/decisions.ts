/**
 * Decisions sent as data parts (spec 4.5): `{approval_id, decision, comment, digest}` on the task
 * it decides (`taskId`), or on its context (`contextId`, the task in `referenceTaskIds`), which
 * runs as a new task. Same checks as the HTTP route; only the requester decides over A2A (role
 * approvers use HTTP). A refused decision leaves a waiting task waiting, with a note; a new task fails.
 */
import { COMMENT_CONTROL, COMMENT_MAX_CHARS, refusalToDecide } from "../approvals/decide.js";
import type { ApprovalRecord } from "../approvals/types.js";
import { isRefusal } from "../errors.js";
import { codePointLength, type JsonValue } from "../json.js";
import type { Runs } from "../runs/index.js";
import type { Store } from "../store/ports.js";
import { type RunInTask, type Started, settled } from "./bridge.js";
import { A2A_CODE } from "./codes.js";
import { ERR, RpcError } from "./jsonrpc.js";
import { awaitingStored } from "./task-fields.js";
import type { TaskBook } from "./tasks.js";
import { type CallContext, FINISHED, type Listener, type TaskRecord } from "./types.js";
import type { IncomingMessage } from "./wire.js";
import { DIGEST_FORM } from "../approvals/digest.js";

interface DecisionRequest {
  readonly approvalId: string;
  readonly decision: "approve" | "reject";
  readonly comment?: string;
  readonly digest?: string;
}

/**
 * The decision in a data part, or -32602 naming what is malformed: read before any task or
 * approval is, by the rules of the HTTP route's schema (422 there).
 */
function readDecision(d: Record<string, JsonValue>): DecisionRequest {
  const decision = d.decision === "approve" || d.decision === "reject" ? d.decision : undefined;
  if (!decision) throw new RpcError(ERR.invalidParams, "Invalid params: decision must be approve or reject");
  if (d.comment !== undefined && (typeof d.comment !== "string" || codePointLength(d.comment) > COMMENT_MAX_CHARS))
    throw new RpcError(ERR.invalidParams, `Invalid params: comment must be text of at most ${COMMENT_MAX_CHARS} characters`);
  if (typeof d.comment === "string" && COMMENT_CONTROL.test(d.comment))
    throw new RpcError(ERR.invalidParams, "Invalid params: comment must not contain control characters other than newline and tab");
  if (d.digest !== undefined && (typeof d.digest !== "string" || !DIGEST_FORM.test(d.digest)))
    throw new RpcError(ERR.invalidParams, "Invalid params: digest should be sha256: followed by 64 lowercase hex characters");
  return {
    approvalId: String(d.approval_id),
    decision,
    ...(typeof d.comment === "string" ? { comment: d.comment } : {}),
    ...(typeof d.digest === "string" ? { digest: d.digest } : {}),
  };
}

export type Decide = (msg: IncomingMessage, data: Record<string, JsonValue>, ctx: CallContext, listener?: Listener) => Promise<Started>;

export function createDecisions({ store, runs, tasks, runInTask }: { store: Store; runs: Runs; tasks: TaskBook; runInTask: RunInTask }): Decide {
  /** The task the decision is on: the one it names, or a new one on its context. */
  async function taskOf(msg: IncomingMessage, ctx: CallContext): Promise<TaskRecord> {
    if (msg.taskId) {
      const task = await tasks.load(ctx.caller, msg.taskId, true);
      // A finished task stays as it finished: a decision on it is refused as any message to it is.
      if (FINISHED.has(task.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
      return task;
    }
    const ref = msg.referenceTaskIds[0];
    const referenced = ref ? await tasks.load(ctx.caller, ref) : undefined;
    const contextId = msg.contextId ?? referenced?.context_id;
    if (!contextId) throw new RpcError(ERR.invalidParams, "Invalid params: a decision names its task (taskId) or its context (contextId)");
    return tasks.create(ctx.caller, contextId);
  }

  async function refuse(task: TaskRecord, code: string, text: string): Promise<Started> {
    if (task.state !== "input-required") return settled(await tasks.fail(task, code, text));
    const request = task.status_parts.filter((p) => p.kind === "data" && (p.data as { type?: string }).type === "approval_request");
    return settled(await tasks.update(task, { status_parts: [{ kind: "text", text }, { kind: "data", data: { type: "error", code } }, ...request] }));
  }

  /** Resumes the run the decision was the last of; else the task waits, listing this approval too. */
  async function resume(task: TaskRecord, decided: ApprovalRecord, ctx: CallContext, listener: Listener | undefined): Promise<Started> {
    const working = await tasks.update(task, { state: "working", status_parts: [] });
    return runInTask(working, ctx.version, listener, async (emit) => {
      const outcome = await runs.resumeAfterDecision(decided, { decider: ctx.caller, emit, logger: ctx.logger, span: ctx.span });
      if (outcome.kind === "started") return outcome.run;
      // Other approvals of the run still wait: the task waits, listing this approval too, so it
      // takes the outcome whichever route finishes the run.
      const pending = await store.listApprovals({ run_id: decided.run_id, status: "pending", limit: 100, offset: 0 });
      // Nothing left to decide: the run resumes with this decision once the conversation is free,
      // or another request resumed it already.
      if (pending.length === 0) return takeCarriersOutcome(working, decided);
      return tasks.update(working, awaitingStored([decided.approval_id], pending));
    });
  }

  /**
   * The task takes the outcome of the run that carries the decision out: the paused run itself
   * once the conversation is free (the next holder of the thread, or the recovery sweep), or the
   * run another request (another decision, the sweep) resumed it with. That run's end settles the
   * task (still working) unless it ended first, when its outcome is read back here, or settled
   * the task already, when that stands.
   */
  async function takeCarriersOutcome(working: TaskRecord, decided: ApprovalRecord): Promise<TaskRecord> {
    const now = await store.getTask(working.task_id);
    if (!now || now.state !== "working") return now ?? working;
    const carrier = await tasks.lastResumeOf(decided.run_id);
    if (!carrier) return tasks.fail(now, "run_failed", `The run of approval ${decided.approval_id} cannot be found; the decision is recorded.`);
    const ended = await tasks.endedRunFields(carrier, now, decided);
    if (ended) return tasks.update(now, ended);
    // Listing the approvals the carrier resumes with, so that its end finds this task.
    const resumes = carrier.status === "running" ? carrier.resumed_from : carrier.run_id;
    const resumedWith = resumes ? await store.listApprovals({ run_id: resumes, limit: 100, offset: 0 }) : [];
    const ids = [decided.approval_id, ...resumedWith.map((a) => a.approval_id).filter((id) => id !== decided.approval_id)];
    const text =
      carrier.status === "running"
        ? `The decision on approval ${decided.approval_id} is recorded; run ${carrier.run_id} carries the conversation on with it, and this task takes its outcome.`
        : `The decision on approval ${decided.approval_id} is recorded; the run resumes as soon as the conversation is free, and this task then takes its outcome.`;
    const waiting = await tasks.update(now, { state: "working", approval_ids: ids, run_id: null, status_parts: [{ kind: "text", text }] });
    // It may have ended between the read and the update, before this task was listed.
    const again = await tasks.lastResumeOf(carrier.run_id);
    const later = again ? await tasks.endedRunFields(again, waiting, decided) : undefined;
    return later ? tasks.update(waiting, later) : waiting;
  }

  return async (msg, data, ctx, listener) => {
    const { approvalId, decision, comment, digest } = readDecision(data);
    const task = await taskOf(msg, ctx);
    const approval = await store.getApproval(approvalId);
    const thread = approval ? await store.getThread(approval.thread_id) : null;
    if (!approval || !thread || approval.thread_id !== task.context_id) return refuse(task, "approval_not_found", "No such approval on this conversation.");
    const refusal = refusalToDecide(ctx.caller, approval, thread);
    if (refusal) return refuse(task, refusal, refusal === "approval_direct_only" ? "The person decides this approval directly, not through an agent." : "Only the requester decides over A2A.");
    if (approval.requester !== ctx.caller.hash) return refuse(task, "not_an_approver", "Only the requester decides over A2A.");
    // Read again right before recording: a task canceled since (CancelTask on any replica) takes no
    // decision, rather than carrying one out under a task that reads canceled.
    if (msg.taskId && FINISHED.has((await store.getTask(task.task_id))?.state ?? task.state)) throw new RpcError(ERR.unsupportedOperation, "The task is in a terminal state");
    let decided: ApprovalRecord;
    try {
      decided = await runs.recordDecision(ctx.caller, thread, approvalId, { decision, ...(comment !== undefined ? { comment } : {}), ...(digest !== undefined ? { digest } : {}) });
    } catch (error) {
      if (isRefusal(error)) return refuse(task, A2A_CODE[error.code], error.message);
      throw error;
    }
    return resume(task, decided, ctx, listener);
  };
}
