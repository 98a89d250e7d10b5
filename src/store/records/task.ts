/** A2A tasks as stored (spec 2.5): owned by subject and actor, `context_id` is the chat thread. */
import type { JsonValue } from "../../json.js";

export type TaskState = "working" | "input-required" | "completed" | "failed" | "canceled";

/** The states a task ends in: a task in one is never changed again. */
export const FINISHED: ReadonlySet<TaskState> = new Set(["completed", "failed", "canceled"]);

/** Version-neutral parts; the wire layer writes them as 0.3 or 1.0. */
export type TaskPart = { readonly kind: "text"; readonly text: string } | { readonly kind: "data"; readonly data: JsonValue; readonly mediaType?: string };

export interface TaskRecord {
  readonly task_id: string;
  readonly context_id: string;
  /** Hashed subject id. */
  readonly owner: string;
  /** Agent that created the task for the subject, or null. */
  readonly actor: string | null;
  readonly state: TaskState;
  /** Parts of the status message (approval requests, errors, notes). */
  readonly status_parts: readonly TaskPart[];
  readonly artifacts: readonly { readonly artifactId: string; readonly name: string; readonly parts: readonly TaskPart[] }[];
  /** Approvals the task waits for (input-required). */
  readonly approval_ids: readonly string[];
  /** The run working on the task and the process running it (for subscribe/cancel on another replica). */
  readonly run_id: string | null;
  readonly instance_id: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface ListTasksQuery {
  readonly owner: string;
  /** Only tasks this agent created; undefined lists the subject's and its agents' tasks. */
  readonly actor?: string;
  readonly context_id?: string;
  readonly limit: number;
  readonly offset: number;
}
