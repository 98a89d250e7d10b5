/**
 * Task records (spec 2.5, 3.3): made for a caller on a context (the chat thread), updated with a
 * fresh `updated_at` (retention counts A2A_TASK_TTL_S from it), failed with an error data part,
 * read only by their owner, and settled when a run resumed by another route ends.
 */
import type { RunOutcome } from "../agent/outcome.js";
import type { ApprovalRecord } from "../approvals/types.js";
import type { Caller } from "../auth/caller.js";
import { type Clock, isoTime } from "../clock.js";
import type { Ids } from "../ids.js";
import type { JsonValue } from "../json.js";
import type { RunRecord, Store, TaskCursor } from "../store/ports.js";
import { ERR, RpcError } from "./jsonrpc.js";
import { awaitingStored, taskFields } from "./task-fields.js";
import type { ListTasksQuery, TaskPart, TaskRecord } from "./types.js";

/** Pages of stranded tasks one pass of the settling sweep reads at most. */
const STRANDED_PAGES = 10;

export interface TaskBookDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly ids: Ids;
  /** Names this process on the tasks it runs (subscribe and cancel reach only its own runs). */
  readonly instanceId: string;
  /** Answers fit a response schema: a stored answer is its JSON, read back as the data part too. */
  readonly structured?: boolean;
}

/** Subject and agent own a task; the user calling directly also owns what their agents created. */
function owns(caller: Caller, t: TaskRecord, agentOnly: boolean): boolean {
  if (t.owner !== caller.hash) return false;
  const actor = caller.principal.actor?.id ?? null;
  if (actor !== null) return t.actor === actor;
  return !agentOnly || t.actor === null;
}

export function createTaskBook({ store, clock, ids, instanceId, structured = false }: TaskBookDeps) {
  const now = () => isoTime(clock.now());
  /** Where the settling sweep's last pass stopped (undefined: it read to the newest). */
  let sweptUpTo: TaskCursor | undefined;

  /**
   * The task patched, with a fresh `updated_at`, or undefined when the store refused the patch: a
   * task that finished meanwhile (canceled on another replica, settled by another run's end or
   * the sweep) stays as it finished, and with `ifUnchanged` one updated since `task` was read is
   * left as it is (the sweep writes from what it read).
   */
  const write = async (task: TaskRecord, patch: Partial<TaskRecord>, ifUnchanged: boolean): Promise<TaskRecord | undefined> => {
    const next = { ...task, ...patch, updated_at: now() };
    return (await store.updateTask(task.task_id, { ...patch, updated_at: next.updated_at }, ifUnchanged ? task.updated_at : undefined)) ? next : undefined;
  };

  /** The task patched (write); refused, the task as stored (as it finished). */
  const update = async (task: TaskRecord, patch: Partial<TaskRecord>): Promise<TaskRecord> =>
    (await write(task, patch, false)) ?? (await store.getTask(task.task_id)) ?? { ...task, ...patch };

  /** The run that resumed `runId`, and the one that resumed that, ...: the last of them. */
  async function lastResumeOf(runId: string): Promise<RunRecord | null> {
    let run = await store.getRun(runId);
    for (let hops = 0; run?.resumed_by && hops < 100; hops++) run = await store.getRun(run.resumed_by);
    return run;
  }

  /**
   * What an ended run came to, read back from the store, as the fields of a task (with the run's
   * answer when it is still the thread's last run): one that waited on `decided`, or, without
   * it, the task the run ran in. Undefined while the run goes on (running, or paused with every
   * approval decided: due to resume).
   */
  async function endedRunFields(run: RunRecord, task: TaskRecord, decided: ApprovalRecord | undefined): Promise<Partial<TaskRecord> | undefined> {
    if (run.status === "running") return undefined;
    const where: TaskPart[] = decided ? [{ kind: "text", text: `The run continued after the approval was decided (run ${run.run_id}).` }] : [];
    if (run.status === "awaiting_approval") {
      const pending = await store.listApprovals({ run_id: run.run_id, status: "pending", limit: 100, offset: 0 });
      if (pending.length === 0) return undefined;
      return awaitingStored(decided ? [decided.approval_id] : [], pending);
    }
    if (run.status === "ok" || run.status === "step_limit") {
      const runs = await store.listRuns(run.thread_id);
      const [last] = runs.at(-1)?.run_id === run.run_id ? ((await store.getMessagePage(run.thread_id, { limit: 1 })) ?? []) : [];
      const text = last?.role === "assistant" ? last.content : "";
      // A structured answer was stored as its JSON once it fitted the schema (a step limit's closing reply is words).
      const answer = structured && run.status === "ok" && text !== "" ? storedJson(text) : undefined;
      const fields = taskFields({ ended: run.status, text, structured: answer, approvals: [], errorCode: undefined, runId: run.run_id }, `${task.task_id}-response`);
      return text === "" ? { ...fields, artifacts: [], status_parts: [...where, { kind: "text", text: "Its answer is in the conversation." }] } : { ...fields, status_parts: where };
    }
    // Failed, timed out, cancelled or cut short: the codes its own stream would have ended with.
    const fields = taskFields({ ended: "error", text: "", structured: undefined, approvals: [], errorCode: run.status === "timeout" ? "timeout" : "run_failed", runId: run.run_id }, "");
    return { ...fields, status_parts: [...where, ...(fields.status_parts ?? [])] };
  }

  /**
   * The task's run is not the one whose outcome it takes: the run resumed a paused run after a
   * decision and ended before it carried the decided calls out (stopped, cut off, the database
   * gone), or the run itself paused and every approval it waits for is decided. The decisions
   * are carried out by the run that resumes the paused run (next, or already, elsewhere), and its
   * end settles this task: working again, no run, listing the paused run's approvals (the
   * settling sweep reads that run back if it ended already). Undefined when the task's run is its
   * outcome (it carried the decisions out itself, paused with approvals pending, or resumed nothing).
   */
  async function waitAgain(task: TaskRecord, runId: string): Promise<TaskRecord | undefined> {
    const fields = await waitingFields(runId);
    return fields && update(task, fields);
  }

  /** waitAgain's fields for a task whose run is `runId`, or undefined when that run is its outcome. */
  async function waitingFields(runId: string): Promise<Partial<TaskRecord> | undefined> {
    const run = await store.getRun(runId);
    const own = run?.status === "awaiting_approval";
    const paused = own ? run : run?.resumed_from ? await store.getRun(run.resumed_from) : null;
    if (!run || !paused || paused.status !== "awaiting_approval" || (!own && paused.resumed_by === run.run_id)) return undefined;
    const approvals = await store.listApprovals({ run_id: paused.run_id, limit: 100, offset: 0 });
    if (own && approvals.some((a) => a.status === "pending")) return undefined;
    const text = "The decision is recorded; the run that carries it out settles this task once it ends.";
    return { state: "working", run_id: null, approval_ids: approvals.map((a) => a.approval_id), status_parts: [{ kind: "text", text }] };
  }

  /**
   * A stranded task (settleStranded) settled now, or false while what it waits for goes on or
   * ended only since `before` (that run's own end may still be writing the task), or when
   * something updated the task since the sweep read it (left to the next pass).
   */
  async function settleOne(t: TaskRecord, before: string): Promise<boolean> {
    // Parsed: adapters write the same instant as "...Z" or "...+00:00".
    const endedBefore = (run: RunRecord) => run.ended_at !== null && Date.parse(run.ended_at) < Date.parse(before);
    if (t.run_id !== null) {
      // Its own run ended and the task's final write was lost (or its process died first). A run
      // that paused, or resumed and was cut, hands the task on to the run that carries the
      // decisions out: it waits on them now, and the next pass reads that run back.
      const own = await store.getRun(t.run_id);
      if (!own || own.status === "running" || !endedBefore(own)) return false;
      const fields = (await waitingFields(own.run_id)) ?? (await endedRunFields(own, t, undefined));
      return fields !== undefined && (await write(t, fields, true)) !== undefined;
    }
    let decided: ApprovalRecord | null = null;
    for (const id of t.approval_ids) if ((decided = await store.getApproval(id))) break;
    const carrier = decided ? await lastResumeOf(decided.run_id) : null;
    if (!carrier || !decided || (carrier.status !== "running" && !endedBefore(carrier))) return false;
    const fields = await endedRunFields(carrier, t, decided);
    return fields !== undefined && (await write(t, fields, true)) !== undefined;
  }

  return {
    update,
    lastResumeOf,
    endedRunFields,

    /**
     * The settling sweep: tasks still waiting although no approval they list is pending, or
     * working on a run that has ended, not updated since `before` (their run's end should have
     * settled them, but its write failed or its process died), take the outcome of the run that
     * carried the decisions out (or of their own run), once it ended before `before` too.
     * Returns how many it settled. A pass reads at most STRANDED_PAGES pages and the next one
     * goes on from where it stopped, back to the oldest once it reached the newest, so tasks
     * left waiting (their run goes on) never hide the others, however many they are.
     */
    async settleStranded(before: string, limit: number): Promise<number> {
      let settledCount = 0;
      for (let page = 0; page < STRANDED_PAGES; page++) {
        const found = await store.strandedTasks(before, limit, sweptUpTo);
        for (const t of found) if (await settleOne(t, before)) settledCount++;
        const last = found.at(-1);
        sweptUpTo = last && found.length === limit ? { updated_at: last.updated_at, task_id: last.task_id } : undefined;
        if (!sweptUpTo) break;
      }
      return settledCount;
    },

    /** One page of tasks; the caller's ownership is in the query. */
    list: (query: ListTasksQuery): Promise<TaskRecord[]> => store.listTasks(query),

    /**
     * The caller's task `id`; an unknown or foreign one is -32001 (spec 7.3). `agentOnly`: a user
     * calling directly does not reach the tasks their agents created (continuing, subscribing).
     */
    async load(caller: Caller, id: JsonValue | undefined, agentOnly = false): Promise<TaskRecord> {
      if (typeof id !== "string" || id === "") throw new RpcError(ERR.invalidParams, "Invalid params: id is required");
      const t = await store.getTask(id);
      if (!t || !owns(caller, t, agentOnly)) throw new RpcError(ERR.taskNotFound, "Task not found");
      return t;
    },

    waitAgain,

    /** A working task on `contextId`, owned by the caller (and its agent). */
    async create(caller: Caller, contextId: string): Promise<TaskRecord> {
      const at = now();
      const actor = caller.principal.actor?.id ?? null;
      const task: TaskRecord = {
        task_id: ids.runId(),
        context_id: contextId,
        owner: caller.hash,
        actor,
        state: "working",
        status_parts: [],
        artifacts: [],
        approval_ids: [],
        run_id: null,
        instance_id: instanceId,
        created_at: at,
        updated_at: at,
      };
      // The task's context is a thread: make sure the row exists (the run claims it properly).
      await store.createThread({ thread_id: contextId, owner: caller.hash, actor, created_at: at, updated_at: at });
      await store.createTask(task);
      return task;
    },

    /** Failed, with a text part and the data part `{type: 'error', code}` (spec 4.5). */
    fail(task: TaskRecord, code: string, text: string): Promise<TaskRecord> {
      return update(task, { state: "failed", status_parts: [{ kind: "text", text }, { kind: "data", data: { type: "error", code } }] });
    },

    /**
     * After a resumed run ends, every waiting task of the requester on that thread takes the
     * outcome (spec 3.3), except those a run of this process is answering (`isLive`); a task whose
     * decision is still waiting for the conversation takes it too. The status text says where the
     * run continued: the task it ran in (`continuedIn`, CONTRACT 5), else (decided over HTTP,
     * expired, recovered) the run.
     */
    async settle(approval: ApprovalRecord, outcome: RunOutcome, isLive: (taskId: string) => boolean, continuedIn: string | undefined): Promise<void> {
      for (const t of await store.tasksWaitingOn(approval.thread_id, approval.approval_id)) {
        if (isLive(t.task_id)) continue;
        const fields = taskFields(outcome, `${t.task_id}-response`);
        const text = continuedIn ? `Continued in task ${continuedIn}.` : `The run continued after the approval was decided (run ${outcome.runId ?? "unknown"}).`;
        const where: TaskPart = { kind: "text", text };
        await update(t, { ...fields, status_parts: [where, ...(fields.status_parts ?? [])] });
      }
    },
  };
}

export type TaskBook = ReturnType<typeof createTaskBook>;

/** A stored structured answer's value, or undefined when the text is not JSON. */
function storedJson(text: string): JsonValue | undefined {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}
