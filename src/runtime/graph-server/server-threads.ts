/**
 * The graph server's threads as this service reads and writes them. The server owns threads and
 * checkpoints (spec 1): a thread is its row (our owner and actor kept in its metadata, which the
 * auth handler filters on) and the `messages` channel of our graph's checkpoints. Everything goes
 * through the server's own storage operations (`Ops`), called without an auth context: the
 * caller was already judged by our routes.
 *
 * The operations object is the server's: it hands it to every request through the Hono context
 * (`LANGGRAPH_OPS`), and our mounted routes pass it on here (see app.ts). The same code then works
 * under `startServer()` and under `langgraphjs dev`, which builds its operations itself.
 */
import type { Ops, Thread } from "@langchain/langgraph-api/storage";
import { AppError } from "../../errors.js";
import type { Message, ThreadRow } from "../../store/ports.js";

/** The id of our graph in langgraph.json: the one graph our threads run. */
export const GRAPH_ID = "agent";
/** The no-op node our own runs write messages as (checkpoints after it end the graph). */
export const RECORD_NODE = "record";
/** Metadata keys that belong to this service; nobody may set them through the native API. */
export const RESERVED_METADATA = ["owner", "actor", "agent_thread", "graph_id", "assistant_id"] as const;

export class GraphServerNotReady extends AppError {
  constructor() {
    super("unavailable", "The graph server has not served a request yet.");
    this.name = "GraphServerNotReady";
  }
}

/** The metadata our threads carry: owner and actor, and where the thread started (copies keep it). */
export function threadMetadata(row: Pick<ThreadRow, "thread_id" | "owner" | "actor">, assistantId: string): Record<string, string> {
  return {
    owner: row.owner,
    ...(row.actor !== null ? { actor: row.actor } : {}),
    agent_thread: row.thread_id,
    graph_id: GRAPH_ID,
    assistant_id: assistantId,
  };
}

export function rowOf(thread: Thread): ThreadRow {
  const meta = thread.metadata ?? {};
  return {
    thread_id: thread.thread_id,
    owner: typeof meta.owner === "string" ? meta.owner : "",
    actor: typeof meta.actor === "string" ? meta.actor : null,
    created_at: new Date(thread.created_at).toISOString(),
    updated_at: new Date(thread.updated_at).toISOString(),
  };
}

const status = (error: unknown) => (error as { status?: unknown }).status;

export interface ServerThreads {
  /** Takes the server's operations from a request (the first one binds them). */
  bind(ops: Ops | undefined): void;
  readonly bound: boolean;
  get(threadId: string): Promise<ThreadRow | null>;
  /** Creates the thread unless it exists (atomic in the server's store): `created` says which. */
  create(row: ThreadRow): Promise<{ created: boolean; row: ThreadRow }>;
  list(query: { owner?: string; actor?: string; limit: number; offset: number; order: "asc" | "desc" }): Promise<ThreadRow[]>;
  /** The server's own deletion (its runs and checkpoints too); false when it had no such thread. */
  delete(threadId: string): Promise<boolean>;
  messages(threadId: string): Promise<Message[]>;
  /** Appends as a checkpoint after the record node, and marks the thread updated. */
  append(threadId: string, messages: readonly Message[]): Promise<void>;
}

/** `assistantId` is asked when a thread is made: the server registers our graph after startup. */
export function serverThreads(assistantId: () => string): ServerThreads {
  let ops: Ops | undefined;
  const need = (): Ops => {
    if (!ops) throw new GraphServerNotReady();
    return ops;
  };
  const config = (threadId: string) => ({ configurable: { thread_id: threadId } });

  return {
    bind(given) {
      ops ??= given;
    },
    get bound() {
      return ops !== undefined;
    },
    async get(threadId) {
      try {
        return rowOf(await need().threads.get(threadId, undefined));
      } catch (error) {
        if (status(error) === 404) return null;
        throw error;
      }
    },
    async create(row) {
      const threads = need().threads;
      try {
        const made = await threads.put(row.thread_id, { metadata: threadMetadata(row, assistantId()), if_exists: "raise" }, undefined);
        return { created: true, row: rowOf(made) };
      } catch (error) {
        if (status(error) !== 409) throw error;
        return { created: false, row: rowOf(await threads.get(row.thread_id, undefined)) };
      }
    },
    async list({ owner, actor, limit, offset, order }) {
      const metadata = owner === undefined ? undefined : { owner, ...(actor !== undefined ? { actor } : {}) };
      const rows: ThreadRow[] = [];
      for await (const { thread } of need().threads.search({ ...(metadata ? { metadata } : {}), limit, offset, sort_by: "updated_at", sort_order: order }, undefined))
        rows.push(rowOf(thread));
      return rows;
    },
    async delete(threadId) {
      try {
        await need().threads.delete(threadId, undefined);
        return true;
      } catch (error) {
        if (status(error) === 404) return false;
        throw error;
      }
    },
    async messages(threadId) {
      const state = await need().threads.state.get(config(threadId), {}, undefined);
      const values = (state.values ?? {}) as { messages?: Message[] };
      return [...(values.messages ?? [])];
    },
    async append(threadId, messages) {
      const { threads } = need();
      if (messages.length > 0) await threads.state.post(config(threadId), { messages: [...messages] }, RECORD_NODE, undefined);
      // The server marks a thread updated only when one of its own runs ends: listing and
      // retention go by updated_at, so an append says so too.
      await threads.patch(threadId, { metadata: {} }, undefined);
    },
  };
}
