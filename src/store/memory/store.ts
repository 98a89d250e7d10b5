/** In-process Store: the default adapter and the reference the contract suite holds others to. */
import type { ListThreadsQuery, Message, RunRecord, Store, ThreadRow } from "../ports.js";

interface ThreadEntry {
  row: ThreadRow;
  messages: Message[];
  runs: Set<string>;
}

export function createMemoryStore(): Store {
  const threads = new Map<string, ThreadEntry>();
  const runs = new Map<string, RunRecord>();

  return {
    async getThread(threadId) {
      return threads.get(threadId)?.row ?? null;
    },
    async createThread(row) {
      const existing = threads.get(row.thread_id);
      if (existing) return { created: false, row: existing.row };
      threads.set(row.thread_id, { row, messages: [], runs: new Set() });
      return { created: true, row };
    },
    async listThreads(query: ListThreadsQuery) {
      const rows: ThreadRow[] = [];
      for (const { row } of threads.values()) {
        if (query.owner !== undefined && row.owner !== query.owner) continue;
        if (query.actor !== undefined && row.actor !== query.actor) continue;
        rows.push(row);
      }
      rows.sort((a, b) =>
        a.updated_at === b.updated_at
          ? a.thread_id < b.thread_id ? -1 : 1
          : a.updated_at < b.updated_at ? 1 : -1,
      );
      return rows.slice(query.offset, query.offset + query.limit);
    },
    async deleteThread(threadId) {
      const entry = threads.get(threadId);
      if (!entry) return false;
      for (const runId of entry.runs) runs.delete(runId);
      threads.delete(threadId);
      return true;
    },
    async getMessages(threadId) {
      return [...(threads.get(threadId)?.messages ?? [])];
    },
    async appendMessages(threadId, messages, at) {
      const entry = threads.get(threadId);
      if (!entry) return;
      entry.messages.push(...messages);
      entry.row = { ...entry.row, updated_at: at };
    },
    async createRun(run: RunRecord) {
      runs.set(run.run_id, run);
      threads.get(run.thread_id)?.runs.add(run.run_id);
    },
    async updateRun(runId, patch) {
      const run = runs.get(runId);
      if (run) runs.set(runId, { ...run, ...patch });
    },
    async getRun(runId) {
      return runs.get(runId) ?? null;
    },
    async listRuns(threadId) {
      const ids = threads.get(threadId)?.runs ?? new Set<string>();
      return [...ids].flatMap((id) => runs.get(id) ?? []);
    },
    async ping() {},
    async close() {},
  };
}
