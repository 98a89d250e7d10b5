/** The task record is kept by the store (store/records); the A2A layer reads it from there. */
export type { ListTasksQuery, TaskPart, TaskRecord, TaskState } from "../store/records/task.js";
