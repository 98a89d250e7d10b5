/**
 * JSON-RPC 2.0 for the A2A endpoint, framework-free: parse one request, name the protocol
 * version from the `A2A-Version` header (CONTRACT 5), and build results and errors.
 */
import type { JsonValue } from "../json.js";
import { A2A_V03_TO_V10 } from "../policy/document.js";

export type A2AVersion = "0.3" | "1.0";

export const ERR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  unsupportedOperation: -32004,
  versionNotSupported: -32009,
} as const;

export class RpcError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
    readonly data?: JsonValue,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

/** Absent, empty or 0.3/0.3.x: 0.3; 1.0/1.0.x: 1.0; anything else: null (-32009). */
export function versionOf(header: string | null | undefined): A2AVersion | null {
  const v = (header ?? "").trim();
  if (v === "" || /^0\.3(\.\d+)?$/.test(v)) return "0.3";
  if (/^1\.0(\.\d+)?$/.test(v)) return "1.0";
  return null;
}

export interface RpcRequest {
  readonly id: string | number | null;
  readonly method: string;
  readonly params: Record<string, JsonValue>;
}

export function parseRequest(body: unknown): RpcRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new RpcError(ERR.invalidRequest, "Invalid Request");
  const r = body as Record<string, JsonValue>;
  if (r.jsonrpc !== "2.0" || typeof r.method !== "string") throw new RpcError(ERR.invalidRequest, "Invalid Request");
  const id = r.id;
  if (id !== undefined && id !== null && typeof id !== "string" && typeof id !== "number") throw new RpcError(ERR.invalidRequest, "Invalid Request");
  const params = r.params ?? {};
  if (typeof params !== "object" || params === null || Array.isArray(params)) throw new RpcError(ERR.invalidParams, "Invalid params");
  return { id: id ?? null, method: r.method, params: params as Record<string, JsonValue> };
}

export function rpcResult(id: RpcRequest["id"], result: JsonValue): Record<string, JsonValue> {
  return { jsonrpc: "2.0", id, result };
}

export function rpcError(id: RpcRequest["id"], code: number, message: string, data?: JsonValue): Record<string, JsonValue> {
  return { jsonrpc: "2.0", id, error: { code, message, ...(data !== undefined ? { data } : {}) } };
}

/** 0.3 method names read as their 1.0 names (the same table the policy judges by). */
export const METHODS_V03: Readonly<Record<string, string>> = A2A_V03_TO_V10;
