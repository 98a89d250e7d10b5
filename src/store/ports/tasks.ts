/** The A2A tasks table (records in ../records/task.ts). */
import type { ListTasksQuery, TaskRecord } from "../records/task.js";

/** A place in a list of tasks ordered by `updated_at`, then `task_id`. */
export type TaskCursor = Pick<TaskRecord, "updated_at" | "task_id">;

export interface TaskStore {
  createTask(task: TaskRecord): Promise<void>;
  getTask(taskId: string): Promise<TaskRecord | null>;
  /**
   * Patches a task that is not finished; false, changing nothing, when it is finished (completed,
   * failed, canceled: it stays as it finished, whoever writes after) or unknown, or, given
   * `ifUpdatedAt`, when it was updated since (its `updated_at` is another instant).
   */
  updateTask(taskId: string, patch: Partial<Omit<TaskRecord, "task_id" | "context_id" | "owner" | "actor" | "created_at">>, ifUpdatedAt?: string): Promise<boolean>;
  /** Most recently updated first. */
  listTasks(query: ListTasksQuery): Promise<TaskRecord[]>;
  /** The thread's tasks that take the outcome of the approval's run: input-required, or working with no run (queued on a decision). */
  tasksWaitingOn(threadId: string, approvalId: string): Promise<TaskRecord[]>;
  /**
   * Tasks whose settling is overdue, not updated since `before` (ISO), oldest first, at most
   * `limit`: those that wait for a decision (as tasksWaitingOn counts them) although none of the
   * approvals they list is pending any more, and working ones whose own run has ended. A run's
   * end should have settled them; the settling sweep looks again. `after`: the next page, those
   * after this one in that order (the last task of the page before).
   */
  strandedTasks(before: string, limit: number, after?: TaskCursor): Promise<TaskRecord[]>;
  /** Drops tasks not updated since `before` (ISO); returns how many. */
  dropTasksBefore(before: string): Promise<number>;
}
