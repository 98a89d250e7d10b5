/**
 * A2A objects on the wire, for both protocol versions (spec 4.5; docs/a2a-wire.md): 1.0 states
 * are `TASK_STATE_*`, parts carry no `kind`, send results are wrapped in `{task}`; 0.3 states are
 * lower-case words, every object carries `kind`, results are bare.
 */
import type { JsonValue } from "../json.js";
import type { A2AVersion } from "./jsonrpc.js";
import { FINISHED, type TaskPart, type TaskRecord, type TaskState } from "./types.js";

const STATE_V10: Record<TaskState, string> = {
  working: "TASK_STATE_WORKING",
  "input-required": "TASK_STATE_INPUT_REQUIRED",
  completed: "TASK_STATE_COMPLETED",
  failed: "TASK_STATE_FAILED",
  canceled: "TASK_STATE_CANCELED",
};

export function wireState(state: TaskState, v: A2AVersion): string {
  return v === "1.0" ? STATE_V10[state] : state;
}

export function wirePart(part: TaskPart, v: A2AVersion): Record<string, JsonValue> {
  if (part.kind === "text") return v === "1.0" ? { text: part.text } : { kind: "text", text: part.text };
  if (v === "1.0") return { data: part.data, ...(part.mediaType ? { mediaType: part.mediaType } : {}) };
  // 0.3 data parts are objects; other values travel wrapped, as the SDK does.
  const isObject = typeof part.data === "object" && part.data !== null && !Array.isArray(part.data);
  return isObject ? { kind: "data", data: part.data } : { kind: "data", data: { value: part.data }, metadata: { data_part_compat: true } };
}

function wireMessage(parts: readonly TaskPart[], task: TaskRecord, v: A2AVersion, id: string, from: "agent" | "user" = "agent"): Record<string, JsonValue> {
  return {
    ...(v === "0.3" ? { kind: "message" } : {}),
    messageId: id,
    role: v === "1.0" ? (from === "agent" ? "ROLE_AGENT" : "ROLE_USER") : from,
    contextId: task.context_id,
    taskId: task.task_id,
    parts: parts.map((p) => wirePart(p, v)),
  };
}

export function wireStatus(task: TaskRecord, v: A2AVersion): Record<string, JsonValue> {
  return {
    state: wireState(task.state, v),
    timestamp: task.updated_at.replace("+00:00", "Z"),
    ...(task.status_parts.length > 0 ? { message: wireMessage(task.status_parts, task, v, `${task.task_id}-status`) } : {}),
  };
}

/** A task; `history` (messages already on the wire) is shown when it holds any. */
export function wireTask(task: TaskRecord, v: A2AVersion, history: readonly Record<string, JsonValue>[] = []): Record<string, JsonValue> {
  return {
    ...(v === "0.3" ? { kind: "task" } : {}),
    id: task.task_id,
    contextId: task.context_id,
    status: wireStatus(task, v),
    artifacts: task.artifacts.map((a) => ({ artifactId: a.artifactId, name: a.name, parts: a.parts.map((p) => wirePart(p, v)) })),
    ...(history.length > 0 ? { history: [...history] } : {}),
  };
}

/** The result of SendMessage: wrapped in 1.0, bare with `kind` in 0.3. */
export function sendResult(task: TaskRecord, v: A2AVersion, history: readonly Record<string, JsonValue>[] = []): Record<string, JsonValue> {
  return v === "1.0" ? { task: wireTask(task, v, history) } : wireTask(task, v, history);
}

/**
 * The request's message as the task's history shows it: its text and data parts, on the task,
 * without its metadata (the origin extension is never kept with the task).
 */
export function requestMessage(msg: IncomingMessage, task: TaskRecord, v: A2AVersion): Record<string, JsonValue> {
  const parts: TaskPart[] = [...(msg.textParts > 0 ? [{ kind: "text" as const, text: msg.text }] : []), ...msg.data.map((data) => ({ kind: "data" as const, data }))];
  return wireMessage(parts, task, v, msg.messageId ?? `${task.task_id}-request`, "user");
}

/** `configuration` of SendMessage: 1.0 `returnImmediately: true`, 0.3 `blocking: false`; `historyLength` in both. */
export interface SendConfiguration {
  readonly returnImmediately: boolean;
  /** At most this many messages of history in the answer (0: none); undefined: no limit. */
  readonly historyLength: number | undefined;
}

export function readSendConfiguration(params: Record<string, JsonValue>, v: A2AVersion): SendConfiguration {
  const c = params.configuration;
  if (typeof c !== "object" || c === null || Array.isArray(c)) return { returnImmediately: false, historyLength: undefined };
  const returnImmediately = v === "1.0" ? c.returnImmediately === true : c.blocking === false;
  const h = c.historyLength;
  return { returnImmediately, historyLength: typeof h === "number" && Number.isFinite(h) ? Math.max(0, Math.floor(h)) : undefined };
}

/** The last `historyLength` messages (all when undefined, none at 0). */
export function limitHistory<T>(history: readonly T[], historyLength: number | undefined): readonly T[] {
  if (historyLength === undefined) return history;
  return historyLength === 0 ? [] : history.slice(-historyLength);
}

export function statusUpdate(task: TaskRecord, v: A2AVersion): Record<string, JsonValue> {
  const update = { taskId: task.task_id, contextId: task.context_id, status: wireStatus(task, v) };
  return v === "1.0" ? { statusUpdate: update } : { kind: "status-update", ...update, final: FINISHED.has(task.state) };
}

export function artifactUpdate(task: TaskRecord, v: A2AVersion, artifact: { artifactId: string; name: string; parts: readonly TaskPart[] }, append: boolean, lastChunk: boolean): Record<string, JsonValue> {
  const update = {
    taskId: task.task_id,
    contextId: task.context_id,
    artifact: { artifactId: artifact.artifactId, name: artifact.name, parts: artifact.parts.map((p) => wirePart(p, v)) },
    append,
    lastChunk,
  };
  return v === "1.0" ? { artifactUpdate: update } : { kind: "artifact-update", ...update };
}

export function taskSnapshot(task: TaskRecord, v: A2AVersion): Record<string, JsonValue> {
  return v === "1.0" ? { task: wireTask(task, v) } : wireTask(task, v);
}

export interface IncomingMessage {
  readonly messageId: string | undefined;
  readonly text: string;
  readonly textParts: number;
  readonly emptyText: boolean;
  readonly data: readonly Record<string, JsonValue>[];
  readonly taskId: string | undefined;
  readonly contextId: string | undefined;
  readonly referenceTaskIds: readonly string[];
  readonly metadata: Record<string, JsonValue>;
}

/** Reads `params.message` of either version; null when it is not a message at all. */
export function readMessage(params: Record<string, JsonValue>): IncomingMessage | null {
  const m = params.message;
  if (typeof m !== "object" || m === null || Array.isArray(m) || !Array.isArray(m.parts)) return null;
  const texts: string[] = [];
  const data: Record<string, JsonValue>[] = [];
  let emptyText = false;
  for (const part of m.parts) {
    if (typeof part !== "object" || part === null || Array.isArray(part)) return null;
    if (typeof part.text === "string") {
      if (part.text === "") emptyText = true;
      texts.push(part.text);
    } else if (part.data !== undefined) {
      const d = part.data;
      const inner = typeof d === "object" && d !== null && !Array.isArray(d) && typeof d.data === "object" && d.data !== null && !Array.isArray(d.data) && "approval_id" in d.data ? d.data : d;
      if (typeof inner === "object" && inner !== null && !Array.isArray(inner)) data.push(inner as Record<string, JsonValue>);
    }
  }
  const str = (v: JsonValue | undefined) => (typeof v === "string" && v !== "" ? v : undefined);
  return {
    messageId: str(m.messageId),
    text: texts.join("\n"),
    textParts: texts.length,
    emptyText,
    data,
    taskId: str(m.taskId),
    contextId: str(m.contextId),
    referenceTaskIds: Array.isArray(m.referenceTaskIds) ? m.referenceTaskIds.filter((x): x is string => typeof x === "string") : [],
    metadata: typeof m.metadata === "object" && m.metadata !== null && !Array.isArray(m.metadata) ? m.metadata : {},
  };
}
