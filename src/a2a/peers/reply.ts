/**
 * What a peer agent answers, read in either version (CONTRACT 6): a JSON-RPC response holding a
 * task or a message (1.0 wraps them, `{task}` or `{message}`; 0.3 sends them bare with `kind`),
 * or for a streamed send a server-sent-events text of such responses, folded into the final task
 * (the policy client reads the whole body; non-JSON answers come back as text). States are read as
 * the lower-case words whatever the version (`TASK_STATE_INPUT_REQUIRED` is `input-required`).
 */
import { ApiCallError } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import type { ApiResponse } from "../../policy/types.js";
import { decodeSse } from "../../sse-decode.js";

type Json = Record<string, JsonValue>;

export type PeerState = "submitted" | "working" | "completed" | "input-required" | "failed" | "canceled" | "rejected";

/** A text part, or a data part's value (file parts and others are not read). */
export type PeerPart = { readonly text: string } | { readonly data: JsonValue };

export interface PeerArtifact {
  readonly artifactId: string | null;
  parts: PeerPart[];
}

export interface PeerTask {
  /** A reply that is a Message rather than a Task reads as a completed task. */
  readonly kind: "task" | "message";
  taskId: string | null;
  contextId: string | null;
  state: PeerState;
  /** Parts of the status message (a message's own parts). */
  statusParts: PeerPart[];
  artifacts: PeerArtifact[];
}

export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

const STATES = new Set<PeerState>(["submitted", "working", "completed", "input-required", "failed", "canceled", "rejected"]);

/** `TASK_STATE_INPUT_REQUIRED` and `input-required` alike; auth-required waits on someone too; anything unknown failed. */
export function peerState(raw: unknown): PeerState {
  const word = String(raw ?? "").replace(/^TASK_STATE_/i, "").toLowerCase().replace(/_/g, "-");
  if (word === "cancelled") return "canceled";
  if (word === "auth-required") return "input-required";
  return STATES.has(word as PeerState) ? (word as PeerState) : "failed";
}

function readPart(p: JsonValue): PeerPart | null {
  if (!isObject(p)) return null;
  if (typeof p.text === "string") return { text: p.text };
  if (!("data" in p)) return null;
  // 0.3 data parts hold objects; the SDK wraps other values as {value} with a compat marker.
  const d = p.data ?? null;
  if (isObject(p.metadata) && p.metadata.data_part_compat === true && isObject(d) && "value" in d) return { data: d.value ?? null };
  return { data: d };
}

const readParts = (v: unknown): PeerPart[] => (Array.isArray(v) ? v.map(readPart).filter((p): p is PeerPart => p !== null) : []);

function taskOf(t: Json): PeerTask {
  const status = isObject(t.status) ? t.status : {};
  return {
    kind: "task",
    taskId: str(t.id),
    contextId: str(t.contextId),
    state: peerState(status.state),
    statusParts: isObject(status.message) ? readParts(status.message.parts) : [],
    artifacts: Array.isArray(t.artifacts) ? t.artifacts.filter(isObject).map((a) => ({ artifactId: str(a.artifactId), parts: readParts(a.parts) })) : [],
  };
}

function messageOf(m: Json): PeerTask {
  return { kind: "message", taskId: str(m.taskId), contextId: str(m.contextId), state: "completed", statusParts: readParts(m.parts), artifacts: [] };
}

type Piece =
  | { readonly kind: "task"; readonly value: Json }
  | { readonly kind: "message"; readonly value: Json }
  | { readonly kind: "status"; readonly value: Json }
  | { readonly kind: "artifact"; readonly value: Json };

/** One result of either version: 1.0 `{task}`, `{message}`, `{statusUpdate}`, `{artifactUpdate}`; 0.3 by `kind`. */
function pieceOf(r: JsonValue | undefined): Piece | null {
  if (!isObject(r)) return null;
  if (isObject(r.task)) return { kind: "task", value: r.task };
  if (isObject(r.message)) return { kind: "message", value: r.message };
  if (isObject(r.statusUpdate)) return { kind: "status", value: r.statusUpdate };
  if (isObject(r.artifactUpdate)) return { kind: "artifact", value: r.artifactUpdate };
  switch (r.kind) {
    case "task":
      return { kind: "task", value: r };
    case "message":
      return { kind: "message", value: r };
    case "status-update":
      return { kind: "status", value: r };
    case "artifact-update":
      return { kind: "artifact", value: r };
  }
  // A 1.0 task result read bare (some servers leave out the wrapper).
  if (isObject(r.status) && typeof r.id === "string") return { kind: "task", value: r };
  return null;
}

/** Standard JSON-RPC and A2A codes, named in the tool's error (the peer's own message is not repeated). */
const CODE_NAMES: Readonly<Record<number, string>> = {
  [-32700]: "parse error",
  [-32600]: "invalid request",
  [-32601]: "method not found",
  [-32602]: "invalid params",
  [-32603]: "internal error",
  [-32001]: "task not found",
  [-32002]: "task not cancelable",
  [-32003]: "push notifications not supported",
  [-32004]: "unsupported operation",
  [-32005]: "content type not supported",
  [-32006]: "invalid agent response",
  [-32007]: "authenticated extended card not configured",
  [-32009]: "version not supported",
};

function rpcFailure(api: string, error: JsonValue): ApiCallError {
  const code = isObject(error) && typeof error.code === "number" ? error.code : null;
  const name = code === null ? "" : CODE_NAMES[code] ? ` (${CODE_NAMES[code]})` : "";
  return new ApiCallError(`the agent ${api} answered with JSON-RPC error ${code ?? "without a code"}${name}`);
}

/** The result of one JSON-RPC response, or the error it carries as a tool error naming its code. */
function resultOf(api: string, envelope: JsonValue): JsonValue | undefined {
  if (!isObject(envelope)) throw new ApiCallError(`the agent ${api} did not answer with a JSON-RPC response`);
  if ("error" in envelope && envelope.error !== null && envelope.error !== undefined) throw rpcFailure(api, envelope.error);
  if (!("result" in envelope)) throw new ApiCallError(`the agent ${api} did not answer with a JSON-RPC response`);
  return envelope.result;
}

/** Text parts merge with the text part they continue (a chunked reply is one text, not many lines). */
function appendParts(to: PeerPart[], parts: readonly PeerPart[]): void {
  for (const part of parts) {
    const last = to.at(-1);
    if (last && "text" in last && "text" in part) to[to.length - 1] = { text: last.text + part.text };
    else to.push(part);
  }
}

/** Folds the streamed events into the task they end with: status updates, artifact chunks. */
function foldStream(api: string, pieces: readonly Piece[]): PeerTask {
  let task: PeerTask | undefined;
  const ensure = (update: Json): PeerTask =>
    (task ??= { kind: "task", taskId: str(update.taskId), contextId: str(update.contextId), state: "working", statusParts: [], artifacts: [] });
  for (const piece of pieces) {
    if (piece.kind === "task") task = taskOf(piece.value);
    else if (piece.kind === "message") {
      // A message inside a task's stream is its agent speaking; alone it is the whole reply.
      if (!task) return messageOf(piece.value);
      task.statusParts = readParts(piece.value.parts);
    } else if (piece.kind === "status") {
      const t = ensure(piece.value);
      const status = isObject(piece.value.status) ? piece.value.status : {};
      t.state = peerState(status.state);
      t.statusParts = isObject(status.message) ? readParts(status.message.parts) : [];
    } else {
      const t = ensure(piece.value);
      const a = isObject(piece.value.artifact) ? piece.value.artifact : {};
      const id = str(a.artifactId);
      const parts = readParts(a.parts);
      const existing = id === null ? undefined : t.artifacts.find((x) => x.artifactId === id);
      if (!existing) t.artifacts.push({ artifactId: id, parts });
      else if (piece.value.append === true) appendParts(existing.parts, parts);
      else existing.parts = parts;
    }
  }
  if (!task) throw new ApiCallError(`the agent ${api} streamed no task`);
  return task;
}

/** Reads the peer's answer to one call: a task (a message reads as a completed one), or a tool error. */
export function readReply(api: string, response: ApiResponse): PeerTask {
  if (response.status < 200 || response.status > 299) throw new ApiCallError(`the agent ${api} answered HTTP ${response.status}`, { status: response.status });
  const { body } = response;
  if (typeof body === "string") {
    const events = decodeSse(body, { dispatchUnterminated: true });
    if (events.length === 0) return readResult(api, parseJson(api, body));
    const pieces = events.map((e) => {
      const piece = pieceOf(resultOf(api, parseJson(api, e.data)));
      if (!piece) throw new ApiCallError(`the agent ${api} streamed something that is not a task, a message or an update`);
      return piece;
    });
    return foldStream(api, pieces);
  }
  return readResult(api, body);
}

function readResult(api: string, envelope: JsonValue): PeerTask {
  const piece = pieceOf(resultOf(api, envelope));
  if (!piece) throw new ApiCallError(`the agent ${api} answered with something that is not a task or a message`);
  if (piece.kind === "task") return taskOf(piece.value);
  if (piece.kind === "message") return messageOf(piece.value);
  return foldStream(api, [piece]);
}

function parseJson(api: string, text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new ApiCallError(`the agent ${api} did not answer with JSON`);
  }
}
