/**
 * JSON-RPC dispatch for A2A, framework-free (as a2a-js's JsonRpcTransportHandler): parse the
 * request, read a 0.3 method name as its 1.0 name, call the method, and wrap its answer, or each
 * update of a streaming method, in a JSON-RPC response carrying the request's id. The HTTP
 * binding (http/routes/a2a.ts) sends a json reply as it is and a stream as server-sent events.
 */
import type { JsonValue } from "../json.js";
import type { A2AHandler } from "./handler.js";
import { ERR, METHODS_V03, parseRequest, type RpcRequest, RpcError, rpcError, rpcResult } from "./jsonrpc.js";
import type { CallContext, WireObject } from "./types.js";

export type A2AReply = { readonly kind: "json"; readonly body: Record<string, JsonValue> } | { readonly kind: "stream"; readonly events: AsyncIterable<Record<string, JsonValue>> };

const UNARY = ["SendMessage", "GetTask", "ListTasks", "CancelTask"] as const satisfies readonly (keyof A2AHandler)[];
const STREAMING = ["SendStreamingMessage", "SubscribeToTask"] as const satisfies readonly (keyof A2AHandler)[];
const isOneOf = <T extends string>(names: readonly T[], name: string): name is T => (names as readonly string[]).includes(name);

async function* responses(id: RpcRequest["id"], events: AsyncIterable<WireObject>): AsyncIterable<Record<string, JsonValue>> {
  for await (const event of events) yield rpcResult(id, event);
}

/**
 * Requests without `A2A-Version: 1.0` are 0.3 (spec 4.5): their names are mapped, and a name
 * unknown to the version (a 1.0 name under 0.3 too) is an unknown method.
 */
export async function dispatch(handler: A2AHandler, body: unknown, ctx: CallContext): Promise<A2AReply> {
  let req: RpcRequest;
  try {
    req = parseRequest(body);
  } catch (error) {
    const e = error as RpcError;
    return { kind: "json", body: rpcError(null, e.rpcCode, e.message) };
  }
  const method = ctx.version === "1.0" ? req.method : (METHODS_V03[req.method] ?? `v03:${req.method}`);
  try {
    if (isOneOf(UNARY, method)) return { kind: "json", body: rpcResult(req.id, await handler[method](req.params, ctx)) };
    if (isOneOf(STREAMING, method)) return { kind: "stream", events: responses(req.id, await handler[method](req.params, ctx)) };
    return { kind: "json", body: rpcError(req.id, ERR.methodNotFound, "Method not found") };
  } catch (error) {
    if (error instanceof RpcError) return { kind: "json", body: rpcError(req.id, error.rpcCode, error.message, error.data) };
    throw error;
  }
}
