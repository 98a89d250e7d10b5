/**
 * JSON-RPC and A2A calls are judged by the JSON-RPC request in their body (spec 2.6, 7.4): a POST
 * must carry exactly one JSON-RPC 2.0 request with an id, nothing else. Under A2A a 0.3 method
 * name is read as its 1.0 name, and a message that decides approvals is an `approve` unless
 * every part naming an approval rejects.
 */
import type { JsonValue } from "../json.js";
import { A2A_V03_TO_V10 } from "./document.js";

export type RpcReading =
  | { readonly ok: true; readonly rpcMethod: string | undefined; readonly a2aOperation: "approve" | "reject" | undefined }
  | { readonly ok: false; readonly problem: string };

const MEMBERS = new Set(["jsonrpc", "method", "params", "id"]);
const SENDS = new Set(["SendMessage", "SendStreamingMessage"]);

export function readRpcCall(protocol: "jsonrpc" | "a2a", method: string, body: JsonValue | undefined): RpcReading {
  if (method === "GET" || method === "HEAD") {
    if (body !== undefined) return bad("a GET or HEAD call to a JSON-RPC API must not have a body");
    return { ok: true, rpcMethod: undefined, a2aOperation: undefined };
  }
  if (body === undefined) return bad("the body must be one JSON-RPC 2.0 request");
  if (Array.isArray(body)) return bad("JSON-RPC batches are refused: send one request");
  if (typeof body !== "object" || body === null) return bad("the body must be one JSON-RPC 2.0 request");
  for (const key of Object.keys(body)) if (!MEMBERS.has(key)) return bad("the JSON-RPC request has members other than jsonrpc, method, params and id");
  if (body.jsonrpc !== "2.0") return bad('the JSON-RPC request must have jsonrpc "2.0"');
  if (typeof body.method !== "string" || body.method === "") return bad("the JSON-RPC request must name its method");
  if (!("id" in body)) return bad("JSON-RPC notifications (no id) are refused");
  if (typeof body.id !== "string" && !(typeof body.id === "number" && Number.isFinite(body.id)))
    return bad("the JSON-RPC id must be a string or a number");
  if ("params" in body && (typeof body.params !== "object" || body.params === null))
    return bad("JSON-RPC params must be an object or a list");

  if (protocol === "jsonrpc") return { ok: true, rpcMethod: body.method, a2aOperation: undefined };
  const rpcMethod = A2A_V03_TO_V10[body.method] ?? body.method;
  if (!SENDS.has(rpcMethod)) return { ok: true, rpcMethod, a2aOperation: undefined };
  const params = body.params as Record<string, JsonValue> | JsonValue[] | undefined;
  const message = params && !Array.isArray(params) ? params.message : undefined;
  const parts = message && typeof message === "object" && !Array.isArray(message) ? message.parts : undefined;
  if (!Array.isArray(parts)) return bad("an A2A message must have params.message with parts");
  return { ok: true, rpcMethod, a2aOperation: decisionOf(parts) };
}

/** `reject` only when every part naming an approval rejects; `approve` when any part names one. */
function decisionOf(parts: readonly JsonValue[]): "approve" | "reject" | undefined {
  let named = 0;
  let rejects = 0;
  for (const part of parts) {
    const decision = approvalDecision(part);
    if (decision === undefined) continue;
    named++;
    if (decision === "reject") rejects++;
  }
  if (named === 0) return undefined;
  return rejects === named ? "reject" : "approve";
}

/** The decision of a data part that names an approval (0.3 `{kind: "data", data}` or 1.0 `{data: {data}}`). */
function approvalDecision(part: JsonValue): string | null | undefined {
  if (typeof part !== "object" || part === null || Array.isArray(part)) return undefined;
  const outer = part.data;
  if (typeof outer !== "object" || outer === null || Array.isArray(outer)) return undefined;
  const inner = typeof outer.data === "object" && outer.data !== null && !Array.isArray(outer.data) ? outer.data : outer;
  if (!("approval_id" in inner)) return undefined;
  return typeof inner.decision === "string" ? inner.decision : null;
}

function bad(problem: string): RpcReading {
  return { ok: false, problem };
}
