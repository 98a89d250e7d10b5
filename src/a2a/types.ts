/** The task record is kept by the store (store/records); the A2A layer reads it from there. */
import type { Caller } from "../auth/caller.js";
import type { JsonValue } from "../json.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { A2AVersion } from "./jsonrpc.js";

export type { ListTasksQuery, TaskPart, TaskRecord, TaskState } from "../store/records/task.js";
export { FINISHED } from "../store/records/task.js";

/** Who calls, under which protocol version, and where its logs go: what every method needs besides its params. */
export interface CallContext {
  readonly caller: Caller;
  readonly version: A2AVersion;
  readonly logger: Logger;
  /** The request's server span (tracing on): runs the call starts or resumes are its children. */
  readonly span?: TraceSpan | undefined;
}

/** One A2A object on the wire (a task, a status or artifact update), before JSON-RPC wraps it. */
export type WireObject = Record<string, JsonValue>;

/** Hears a live task's updates as they happen (a stream's queue, a subscriber's). */
export type Listener = (event: WireObject) => void;
