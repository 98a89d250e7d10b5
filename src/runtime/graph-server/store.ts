/**
 * The Store under graph-server: threads and messages are the server's (server-threads.ts); run
 * records, approvals and A2A tasks are ours, in `base` (memory, or the server's Postgres under a
 * schema of our own). `base` keeps a mirror row of each thread our runs touch, because its runs,
 * approvals and tasks hang off a thread row (and Postgres has the foreign keys); the server's row
 * is the one that is read. Deleting a thread goes through the server first, then ours.
 */
import { LeaseLost } from "../../errors.js";
import type { Message, Store, ThreadRow } from "../../store/ports.js";
import { pageOfMessages } from "../../store/records/messages.js";
import type { ServerThreads } from "./server-threads.js";

export function graphServerStore(base: Store, server: ServerThreads): Store {
  /** The mirror row in `base` (created from the server's row when missing). */
  const mirror = async (threadId: string): Promise<ThreadRow | null> => {
    const row = await server.get(threadId);
    if (row) await base.createThread(row);
    return row;
  };
  const createThread = async (row: ThreadRow) => {
    const made = await server.create(row);
    await base.createThread(made.row);
    return made;
  };
  const append = (threadId: string, messages: readonly Message[]) => server.append(threadId, messages);

  return {
    ...base,
    getThread: (threadId) => server.get(threadId),
    createThread,
    listThreads: ({ owner, actor, limit, offset }) =>
      server.list({ ...(owner !== undefined ? { owner } : {}), ...(actor !== undefined ? { actor } : {}), limit, offset, order: "desc" }),
    async idleThreads(before, limit) {
      const oldest = await server.list({ limit, offset: 0, order: "asc" });
      return oldest.filter((r) => r.updated_at < before).map((r) => r.thread_id);
    },
    async deleteThread(threadId) {
      await mirror(threadId);
      const onServer = await server.delete(threadId);
      const ours = await base.deleteThread(threadId);
      return onServer || ours;
    },
    getMessages: (threadId) => server.messages(threadId),
    // The server keeps a thread's messages in its state, read whole: the page is cut from them.
    getMessagePage: async (threadId, page) => pageOfMessages(await server.messages(threadId), page),
    async appendMessages(threadId, messages, at, fence) {
      // The fence is checked where the lease lives (Postgres refuses a write past a lost lease).
      if (fence) await base.appendMessages(threadId, [], at, fence);
      await append(threadId, messages);
    },
    async claimThread(row, lease, start) {
      const { created, row: stored } = await createThread(row);
      const handle = await lease.port.acquire(row.thread_id, lease.holder, lease.ttlMs);
      const started = created && handle !== null && start !== undefined;
      if (started) {
        await base.createRun(start.run);
        await append(row.thread_id, start.messages);
      }
      return { created, row: stored, lease: handle, started };
    },
    async createRun(run, appended) {
      if (!(await base.getThread(run.thread_id))) await mirror(run.thread_id);
      await base.createRun(run);
      if (appended && appended.messages.length > 0) await append(run.thread_id, appended.messages);
    },
    async finishRun(runId, end, last, handle, port) {
      // The last messages go to the server only while the lease still holds the thread.
      if (!(await port.renew(handle, 1_000))) throw new LeaseLost();
      if (last.messages.length > 0) await append(handle.threadId, last.messages);
      await base.finishRun(runId, end, { messages: [], at: last.at }, handle, port);
    },
    async ping() {
      if (!server.bound) throw new Error("the graph server has not served a request yet");
      await base.ping();
    },
  };
}
