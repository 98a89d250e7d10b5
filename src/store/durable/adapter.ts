/**
 * The Store and ThreadLease ports over the Durable Objects (./objects.ts): threads, runs,
 * approvals and tasks in the store object's SQLite, the lease in one object per thread. Shared by
 * every isolate of the worker, so the port's promises for processes that share an adapter hold:
 * fenced writes are refused once the lease moved on, and markLostRuns finds the runs of isolates
 * that died. claimThread and finishRun ignore the lease port they are given (like Postgres's, the
 * leases are this adapter's own: the lease object takes the lease and makes the write in one step).
 */
import { isoTime, type Clock } from "../../clock.js";
import { AppError, isAppError, LeaseLost } from "../../errors.js";
import type { LeaseHandle, Store, ThreadLease } from "../ports.js";
import type { DurableObjects, FencedWrite } from "./objects.js";

/**
 * Every method of `port`, with a failure of an object (overloaded, reset, unreachable) thrown as
 * code `unavailable` (503), like a database that is down; the port's own errors (LeaseLost) pass.
 */
function guarded<T extends object>(port: T): T {
  const wrap = (method: (...args: unknown[]) => Promise<unknown>) => async (...args: unknown[]) => {
    try {
      return await method(...args);
    } catch (error) {
      if (isAppError(error)) throw error;
      throw new AppError("unavailable", "The Durable Object storage did not answer.", { cause: error });
    }
  };
  return Object.fromEntries(Object.entries(port).map(([name, method]) => [name, wrap(method as (...args: unknown[]) => Promise<unknown>)])) as T;
}

export function createDurableLease(objects: DurableObjects): ThreadLease {
  return guarded<ThreadLease>({
    async acquire(threadId, holder, ttlMs) {
      const generation = await objects.lease(threadId).acquire(holder, ttlMs);
      return generation === null ? null : { threadId, holder, generation };
    },
    renew: (handle: LeaseHandle, ttlMs) => objects.lease(handle.threadId).renew(handle.generation, ttlMs),
    release: (handle) => objects.lease(handle.threadId).release(handle.generation),
    isHeld: (threadId) => objects.lease(threadId).isHeld(),
  });
}

export function createDurableStore(objects: DurableObjects, clock: Clock): Store {
  const s = () => objects.store();
  const fenced = async (threadId: string, fence: LeaseHandle, write: FencedWrite, release = false) => {
    if (!(await objects.lease(threadId).fenced(fence.generation, write, release))) throw new LeaseLost();
  };
  return guarded<Store>({
    getThread: (id) => s().getThread(id),
    createThread: (row) => s().createThread(row),
    listThreads: (q) => s().listThreads(q),
    idleThreads: (before, limit) => s().idleThreads(before, limit),
    deleteThread: (id) => s().deleteThread(id),
    getMessages: (id) => s().getMessages(id),
    getMessagePage: (id, page) => s().getMessagePage(id, page),
    async appendMessages(threadId, messages, at, fence) {
      if (fence) await fenced(threadId, fence, { kind: "append", threadId, messages, at });
      else await s().appendMessages(threadId, messages, at);
    },

    async createRun(run, append) {
      if (append?.fence) await fenced(run.thread_id, append.fence, { kind: "createRun", run, messages: append.messages, at: append.at });
      else await s().createRun(run, append && { messages: append.messages, at: append.at });
    },
    updateRun: (id, patch) => s().updateRun(id, patch),
    getRun: (id) => s().getRun(id),
    listRuns: (id) => s().listRuns(id),
    async claimThread(row, lease, start) {
      const answer = await objects.lease(row.thread_id).claim(lease.holder, lease.ttlMs, row, start ?? null);
      const handle = answer.generation === null ? null : { threadId: row.thread_id, holder: lease.holder, generation: answer.generation };
      return { created: answer.created, row: answer.row, lease: handle, started: answer.started };
    },
    finishRun: (runId, end, last, handle) =>
      fenced(handle.threadId, handle, { kind: "finish", runId, end, threadId: handle.threadId, messages: last.messages, at: last.at }, true),
    threadBlockers: (id) => s().threadBlockers(id),
    dueRuns: (limit) => s().dueRuns(limit),
    markResumed: (id, by) => s().markResumed(id, by),

    /** Runs still `running` whose thread has been without a lease for `graceMs`: their isolate is gone. */
    async markLostRuns(graceMs) {
      const now = clock.now();
      const running = await s().runningBefore(isoTime(now - graceMs));
      const threads = [...new Set(running.map((r) => r.thread_id))];
      const lapsed = await Promise.all(threads.map(async (id) => ((await objects.lease(id).lapsedMs()) ?? -1) >= graceMs));
      const gone = new Set(threads.filter((_, i) => lapsed[i]));
      const lost = running.filter((r) => gone.has(r.thread_id)).map((r) => r.run_id);
      return lost.length === 0 ? 0 : s().markLost(lost, isoTime(now));
    },

    createApproval: (a) => s().createApproval(a),
    getApproval: (id) => s().getApproval(id),
    listApprovals: (q) => s().listApprovals(q),
    decideApproval: (id, d) => s().decideApproval(id, d),
    claimApprovalExecution: (id, at) => s().claimApprovalExecution(id, at),
    recordApprovalResult: (id, result) => s().recordApprovalResult(id, result),
    dueApprovals: (now) => s().dueApprovals(now),
    findApproval: (threadId, toolCallId, digest) => s().findApproval(threadId, toolCallId, digest),
    moveApproval: (id, runId, runTrace) => s().moveApproval(id, runId, runTrace),
    markOutcomeUnknown: (id) => s().markOutcomeUnknown(id),

    createTask: (t) => s().createTask(t),
    getTask: (id) => s().getTask(id),
    updateTask: (id, patch, ifUpdatedAt) => s().updateTask(id, patch, ifUpdatedAt),
    listTasks: (q) => s().listTasks(q),
    tasksWaitingOn: (threadId, approvalId) => s().tasksWaitingOn(threadId, approvalId),
    strandedTasks: (before, limit, after) => s().strandedTasks(before, limit, after),
    dropTasksBefore: (before) => s().dropTasksBefore(before),

    ping: () => s().ping(),
    close: async () => {},
  });
}
