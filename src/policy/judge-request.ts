/**
 * A tool's request, read and judged before anything else happens to it: the API named, the
 * method, the path checked and filled, headers and query cleaned, the body read as JSON-RPC where
 * the API speaks it, the operation label checked, and the policy's verdict. Every refusal of the
 * request itself is thrown here; what is left to refuse (credential, limits) is the run's.
 */
import { ApiPolicyError } from "../errors.js";
import type { ApiPolicy, Gate, Policy } from "./document.js";
import type { HeldCall } from "./gate.js";
import { describeSegments, judge, type JudgedCall } from "./judge.js";
import { readRpcCall } from "./jsonrpc.js";
import type { LabelIndex } from "./labels.js";
import { PathError, type ResolvedPath, resolvePath } from "./paths.js";
import { HTTP_METHODS } from "./schema.js";
import type { ApiRequest } from "./types.js";
import { checkBody, queryPairs, toolHeaders } from "./wire.js";

/** A request the policy allows, as it would be sent. */
export interface JudgedRequest {
  readonly api: ApiPolicy;
  /** Upper case. */
  readonly method: string;
  /** The judged path, ids filled in: sent as is, never re-resolved. */
  readonly path: string;
  readonly call: JudgedCall;
  /** The approval rule that gates the call, or null when none does. */
  readonly gate: Gate | null;
  /** The tool's headers, cleaned and keyed in lower case; the client adds its own before sending. */
  readonly headers: Record<string, string>;
  /** The call exactly as it would be sent, for a person to approve when it is gated. */
  readonly held: HeldCall;
}

/**
 * The methods a policy can name. Checks on a call's path are written without regular
 * expressions where they can be: a call runs them once, between two trips through the network
 * stack that leave the caches cold, and each regular expression brings its own compiled code and
 * data back into them (judgeRequest took 3.4-4.7 µs inside loopback calls on Node 20 against
 * 0.35 µs in a hot loop; scripts/BENCHMARKS.md).
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set(HTTP_METHODS);

export function judgeRequest(policy: Policy, labels: LabelIndex, apiName: string, request: ApiRequest): JudgedRequest {
  const api = policy.apis.get(apiName);
  if (!api) throw new ApiPolicyError(`there is no API named ${JSON.stringify(apiName)} in the policy; nothing was sent`);
  const method = typeof request.method === "string" ? request.method.toUpperCase() : "";
  if (!KNOWN_METHODS.has(method)) throw new ApiPolicyError("the method is not an HTTP method the policy knows; nothing was sent");

  const resolved = resolveRequestPath(request);
  const { path } = resolved;

  const headers = toolHeaders(request.headers);
  const query = queryPairs(request.query, api.pagination);
  checkBody(request.body);
  if (request.body !== undefined && (method === "GET" || method === "HEAD")) throw new ApiPolicyError("a GET or HEAD call must not have a body; nothing was sent");

  let rpcMethod: string | undefined;
  let a2aOperation: "approve" | "reject" | undefined;
  if (api.protocol !== "http") {
    const reading = readRpcCall(api.protocol, method, request.body);
    if (!reading.ok) throw new ApiPolicyError(`${reading.problem}; nothing was sent`);
    rpcMethod = reading.rpcMethod;
    a2aOperation = reading.a2aOperation;
  }

  const call = describeSegments(method, resolved.segments, { operationId: request.operationId, rpcMethod, a2aOperation });
  if (call.operationId !== undefined && !labels.fits(api.name, call))
    throw new ApiPolicyError(`operation_id ${call.operationId} does not match the request sent; nothing was sent`);
  const verdict = judge(api, call);
  if (!verdict.allowed) throw new ApiPolicyError(`${verdict.reason}; nothing was sent`);

  const held: HeldCall = { api: api.name, method, path, operationId: call.operationId ?? null, rpcMethod: call.rpcMethod ?? null, a2aOperation: call.a2aOperation ?? null, query, body: request.body, redact: request.redact ?? [] };
  return { api, method, path, call, gate: verdict.gate, headers, held };
}

function resolveRequestPath(request: ApiRequest): ResolvedPath {
  if (typeof request.path !== "string") throw new ApiPolicyError("the path must be text; nothing was sent");
  try {
    return resolvePath(request.path, request.pathParams);
  } catch (error) {
    if (error instanceof PathError) throw new ApiPolicyError(`${error.message}; nothing was sent`);
    throw error;
  }
}
