/** The threads table and the messages attached to each thread. */
import type { JsonValue } from "../../json.js";
import type { LeaseHandle } from "./lease.js";

export interface ThreadRow {
  readonly thread_id: string;
  /** Hashed principal id of the subject that owns the thread. */
  readonly owner: string;
  /** Agent (actor id) that started the thread for the owner, or null for a direct thread. */
  readonly actor: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** Parsed arguments; `{}` when the model's text was not valid JSON. */
  readonly args: Record<string, JsonValue>;
}

export type Message =
  | { readonly id: string; readonly role: "user"; readonly content: string }
  | {
      readonly id: string;
      readonly role: "assistant";
      readonly content: string;
      readonly tool_calls?: readonly ToolCall[];
    }
  | {
      readonly id: string;
      readonly role: "tool";
      readonly content: string;
      readonly tool_call_id: string;
      readonly name: string;
      readonly is_error: boolean;
      readonly error_id?: string;
    };

export interface ListThreadsQuery {
  /** Only threads of this owner; undefined lists every owner (read-across). */
  readonly owner?: string;
  /** With owner: only threads this actor started (a delegated caller). */
  readonly actor?: string;
  readonly limit: number;
  readonly offset: number;
}

/** A page of a thread's messages: the newest `limit`, or the `limit` next to an anchor message. */
export interface MessagePage {
  readonly limit: number;
  /** The messages just before this message (by id), oldest first; at most one of before and after. */
  readonly before?: string | undefined;
  /** The messages just after this message (by id). */
  readonly after?: string | undefined;
}

export interface ThreadStore {
  getThread(threadId: string): Promise<ThreadRow | null>;
  /**
   * Creates the thread unless it exists. Atomic: under concurrent calls with one id exactly one
   * caller gets `created: true`; every caller gets the row that is stored.
   */
  createThread(row: ThreadRow): Promise<{ created: boolean; row: ThreadRow }>;
  /** Most recently updated first, ties by id. */
  listThreads(query: ListThreadsQuery): Promise<ThreadRow[]>;
  /** Ids of threads not updated since `before` (ISO), oldest first, for retention. */
  idleThreads(before: string, limit: number): Promise<string[]>;
  /** Deletes the thread and everything attached (messages, run records, approvals, tasks). False if unknown. */
  deleteThread(threadId: string): Promise<boolean>;

  getMessages(threadId: string): Promise<Message[]>;
  /**
   * Up to `page.limit` messages in thread order: the newest, or those just before or after the
   * anchor message. Null when the anchor is not a message of this thread; [] for a thread that
   * does not exist. Reads only the page (and the anchor), whatever the thread's length.
   */
  getMessagePage(threadId: string, page: MessagePage): Promise<Message[] | null>;
  /**
   * Appends in order and bumps the thread's `updated_at`. With `fence`, the write happens only
   * while that lease still holds the thread (adapters shared by replicas refuse it otherwise).
   */
  appendMessages(threadId: string, messages: readonly Message[], at: string, fence?: LeaseHandle): Promise<void>;
}
