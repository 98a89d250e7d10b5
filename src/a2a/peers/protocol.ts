/**
 * What this agent puts on the wire toward a peer agent, in the version the peer's card names
 * (CONTRACT 6): 1.0 peers get the 1.0 method names, the `A2A-Version: 1.0` header, parts without
 * `kind` and role `ROLE_USER`; 0.3 peers get `message/send` and the like, `kind` on every object,
 * role `user` and no version header. The policy judges every call by its 1.0 name either way.
 */
import type { JsonValue } from "../../json.js";
import { A2A_V03_TO_V10 } from "../../policy/document.js";
import type { A2AVersion } from "../jsonrpc.js";

type Json = Record<string, JsonValue>;

/** The methods the peer tools call, by their 1.0 names (the names the policy knows). */
export type PeerMethod = "SendMessage" | "SendStreamingMessage" | "GetTask" | "CancelTask";

const V10_TO_V03: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(A2A_V03_TO_V10).map(([v03, v10]) => [v10, v03]));

export function wireMethod(method: PeerMethod, v: A2AVersion): string {
  return v === "1.0" ? method : V10_TO_V03[method]!;
}

/** The version a JSON-RPC body speaks, read off its method name (a recorded body, replayed). */
export function versionOfBody(body: Json): A2AVersion {
  return typeof body.method === "string" && body.method.includes("/") ? "0.3" : "1.0";
}

export function rpcHeaders(v: A2AVersion): Record<string, string> {
  return v === "1.0" ? { "A2A-Version": "1.0" } : {};
}

export function rpcBody(id: string, method: PeerMethod, params: Json, v: A2AVersion): Json {
  return { jsonrpc: "2.0", id, method: wireMethod(method, v), params };
}

export function textPart(text: string, v: A2AVersion): Json {
  return v === "1.0" ? { text } : { kind: "text", text };
}

export function dataPart(data: Json, v: A2AVersion): Json {
  return v === "1.0" ? { data, mediaType: "application/json" } : { kind: "data", data };
}

export interface OutgoingMessage {
  readonly messageId: string;
  readonly parts: readonly Json[];
  readonly contextId: string | undefined;
  readonly taskId: string | undefined;
  /** Message metadata (the origin extension); the extensions it uses are named beside it. */
  readonly metadata?: Json | undefined;
}

export function userMessage(m: OutgoingMessage, v: A2AVersion): Json {
  const extensions = m.metadata ? Object.keys(m.metadata) : [];
  return {
    ...(v === "0.3" ? { kind: "message" } : {}),
    messageId: m.messageId,
    role: v === "1.0" ? "ROLE_USER" : "user",
    parts: [...m.parts],
    ...(m.contextId !== undefined ? { contextId: m.contextId } : {}),
    ...(m.taskId !== undefined ? { taskId: m.taskId } : {}),
    ...(m.metadata ? { metadata: m.metadata, extensions } : {}),
  };
}

/**
 * Params of SendMessage: the call waits for the task's outcome. 1.0 waits unless told
 * `returnImmediately`; the SDK's 0.3 layer returns at once unless `blocking` is true, so 0.3
 * asks for it.
 */
export function sendParams(message: Json, v: A2AVersion): Json {
  return v === "1.0" ? { message } : { message, configuration: { blocking: true } };
}
