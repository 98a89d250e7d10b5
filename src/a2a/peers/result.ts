/**
 * A peer's task as the model reads it (CONTRACT 6): a JSON object with `task_id`, `context_id`,
 * `state` (lower case) and `text`: the text parts of the artifacts, else of the status message,
 * joined (artifacts and message parts by a line break), cut at A2A_REPLY_MAX_CHARS code points
 * and then ending `[truncated]`. A failed task (or a refused decision) adds the error code its
 * data part names.
 */
import type { JsonValue } from "../../json.js";
import { isObject, type PeerPart, type PeerTask } from "./reply.js";

type Json = Record<string, JsonValue>;

export const TRUNCATED = "[truncated]";

const texts = (parts: readonly PeerPart[]): string[] => parts.flatMap((p) => ("text" in p ? [p.text] : []));

/**
 * The artifacts' text, else the status message's. An artifact's text parts are one text: a
 * streamed reply arrives as chunks appended to one artifact, and a peer that keeps each chunk as
 * a part of its own (the SDK's task store does) must read the same as one that joins them.
 */
export function replyText(task: PeerTask): string {
  const fromArtifacts = task.artifacts.map((a) => texts(a.parts)).filter((t) => t.length > 0);
  if (fromArtifacts.length > 0) return fromArtifacts.map((t) => t.join("")).join("\n");
  return texts(task.statusParts).join("\n");
}

/** At most `max` code points, then `[truncated]` when anything was cut. */
export function capText(text: string, max: number): string {
  // Counting first keeps the common short reply from being split into code points.
  if (text.length <= max) return text;
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, max).join("")}${TRUNCATED}`;
}

/** The data part `{type, ...}` of the status message with this type, if any. */
export function statusData(task: PeerTask, type: string): Json | undefined {
  for (const part of task.statusParts) {
    if (!("data" in part) || !isObject(part.data)) continue;
    if (part.data.type === type) return part.data;
    // Some 1.0 writers nest the object once more (`{data: {data: {...}}}`).
    if (isObject(part.data.data) && part.data.data.type === type) return part.data.data;
  }
  return undefined;
}

export function peerResult(task: PeerTask, maxChars: number, extra: Json = {}): Json {
  // A failed task's code, or the code of a decision the peer refused (the task still waits).
  const error = statusData(task, "error");
  return {
    task_id: task.taskId,
    context_id: task.contextId,
    state: task.state,
    text: capText(replyText(task), maxChars),
    ...(task.kind === "message" ? { reply: "message" } : {}),
    ...(error && typeof error.code === "string" ? { error_code: error.code } : {}),
    ...extra,
  };
}
