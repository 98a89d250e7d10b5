/**
 * The policy client: every outbound call a tool makes (spec 2.6, 7.4, 8). Everything is decided
 * before anything is sent: the path is checked and filled, headers and query cleaned, the body
 * read as JSON-RPC where the API speaks it, the call judged, held for approval when gated, and
 * the limits taken last. The URL is built from the base URL and the judged path by hand, never
 * re-resolved, so the path that was judged is the path that is sent. Redirects are not followed.
 */
import type { Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { ApiCallError, ApiPolicyError } from "../errors.js";
import type { Logger } from "../observability/logger.js";
import type { ApiPolicy, Policy } from "./document.js";
import type { ApprovalGate, HeldCall } from "./gate.js";
import { describeSegments, judge, type JudgedCall } from "./judge.js";
import { readRpcCall } from "./jsonrpc.js";
import type { LabelIndex } from "./labels.js";
import { TokenBucket } from "./limits.js";
import { PathError, type ResolvedPath, resolvePath } from "./paths.js";
import type { ApiClient, ApiRequest, ApiResponse } from "./types.js";
import { checkBody, parseAnswer, queryPairs, queryString, readAnswer, toolHeaders } from "./wire.js";

export interface PolicyClientOptions {
  readonly policy: Policy;
  /** Base URL of each API, checked at startup (origin plus a kept path prefix, no trailing slash). */
  readonly baseUrls: ReadonlyMap<string, string>;
  /** Bearer tokens of `auth: bearer` APIs, read from their `token_env` at startup. */
  readonly tokens: ReadonlyMap<string, string>;
  readonly labels: LabelIndex;
  readonly fetch: typeof fetch;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly gate: ApprovalGate | undefined;
}

export interface RunScope {
  readonly threadId: string;
  readonly runId: string;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** The run resumes after an approval decision. */
  readonly resumed: boolean;
}

/** Which tool call the calls come from, and the model's words of that turn. */
export interface ToolCallScope {
  readonly tool: string;
  readonly toolCallId: string;
  readonly reason: string;
}

export interface PolicyClient {
  /** A client for one run, then for one tool call of it. */
  forRun(scope: RunScope): (call: ToolCallScope) => ApiClient;
}

export function createPolicyClient(options: PolicyClientOptions): PolicyClient {
  const { policy, clock } = options;
  const buckets = new Map<string, TokenBucket>();
  for (const [name, api] of policy.apis)
    if (api.limits.ratePerMinute !== undefined) buckets.set(name, new TokenBucket(api.limits.ratePerMinute, clock));

  return {
    forRun(scope) {
      const calls = new Map<string, number>();
      // One listener per run, not per call: stopping the run fails every call still in flight.
      const inflight = new Set<(reason: unknown) => void>();
      scope.signal.addEventListener("abort", () => {
        for (const reject of inflight) reject(scope.signal.reason);
      }, { once: true });
      return (toolCall) => ({
        request: (apiName, request) => send(options, scope, toolCall, calls, inflight, buckets, apiName, request),
      });
    },
  };
}

async function send(
  options: PolicyClientOptions,
  scope: RunScope,
  toolCall: ToolCallScope,
  calls: Map<string, number>,
  inflight: Set<(reason: unknown) => void>,
  buckets: Map<string, TokenBucket>,
  apiName: string,
  request: ApiRequest,
): Promise<ApiResponse> {
  const api = options.policy.apis.get(apiName);
  if (!api) throw new ApiPolicyError(`there is no API named ${JSON.stringify(apiName)} in the policy; nothing was sent`);
  const method = typeof request.method === "string" ? request.method.toUpperCase() : "";
  if (!/^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/.test(method)) throw new ApiPolicyError("the method is not an HTTP method the policy knows; nothing was sent");

  if (typeof request.path !== "string") throw new ApiPolicyError("the path must be text; nothing was sent");
  let resolved: ResolvedPath;
  try {
    resolved = resolvePath(request.path, request.pathParams);
  } catch (error) {
    if (error instanceof PathError) throw new ApiPolicyError(`${error.message}; nothing was sent`);
    throw error;
  }
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
  if (call.operationId !== undefined && !options.labels.fits(api.name, call))
    throw new ApiPolicyError(`operation_id ${call.operationId} does not match the request sent; nothing was sent`);
  const verdict = judge(api, call);
  if (!verdict.allowed) throw new ApiPolicyError(`${verdict.reason}; nothing was sent`);

  let held: HeldCall = { api: api.name, method, path, operationId: call.operationId ?? null, rpcMethod: call.rpcMethod ?? null, a2aOperation: call.a2aOperation ?? null, query, body: request.body, redact: request.redact ?? [] };
  let approvalId: string | undefined;
  if (verdict.gate && !options.gate)
    throw new ApiPolicyError(`the call needs approval (API ${api.name}) and nothing here can hold it for a person; nothing was sent`);
  if (options.gate) {
    const outcome = await options.gate.hold(held, verdict.gate, {
      threadId: scope.threadId,
      runId: scope.runId,
      tool: toolCall.tool,
      toolCallId: toolCall.toolCallId,
      reason: toolCall.reason,
      principal: scope.principal,
      signal: scope.signal,
      resumed: scope.resumed,
    });
    if (outcome.kind === "answered") return outcome.response;
    if (outcome.kind === "send") {
      // Exactly the recorded call: what the person saw and approved, not what the replay rebuilt.
      held = outcome.call;
      approvalId = outcome.approvalId;
    }
  }

  const credential = credentialFor(options, api, scope.principal);
  takeLimits(api, calls, buckets);
  if (approvalId !== undefined) {
    // Claimed only now that every refusal is decided: a call claimed once is never sent again.
    if (!(await options.gate!.claim(approvalId))) throw new ApiPolicyError("the approved call was already sent once; it is not sent again");
    // The approval id names this one decision: an upstream that honours the key tells a
    // person's retry of the same approved call from a new call.
    headers["idempotency-key"] = approvalId;
  }

  // The policy's credential overrides a tool-set header of that name.
  if (credential) headers[credential.header.toLowerCase()] = credential.value;
  if (held.body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
  if (api.limits.maxResponseBytes !== undefined) headers["accept-encoding"] = "gzip, deflate";
  const url = `${options.baseUrls.get(api.name)}${path}${queryString(held.query)}`;
  const response = await transmit(options, scope, api, call, url, method, headers, inflight, request.path, held.body);
  if (approvalId !== undefined) await options.gate?.answered(approvalId, response);
  return response;
}

function credentialFor(options: PolicyClientOptions, api: ApiPolicy, principal: Principal): { header: string; value: string } | undefined {
  switch (api.auth) {
    case "none":
      return undefined;
    case "bearer": {
      const token = options.tokens.get(api.name);
      if (!token) throw new ApiPolicyError(`the credential of API ${api.name} is not configured; nothing was sent`);
      return { header: "Authorization", value: `Bearer ${token}` };
    }
    case "forward": {
      if (api.forwardAudience !== undefined) {
        // The caller's own verified token, only when it was issued for this audience.
        const token = principal.token;
        if (!token || !token.audiences.includes(api.forwardAudience))
          throw new ApiPolicyError(`the caller's token is not for API ${api.name}'s audience; nothing was sent`);
        return { header: api.forwardHeader, value: `Bearer ${token.raw}` };
      }
      const credential = principal.credentials[api.name];
      if (!credential) throw new ApiPolicyError(`the caller has no credential to forward to API ${api.name}; nothing was sent`);
      return { header: api.forwardHeader, value: credential };
    }
    case "exchange":
      throw new ApiPolicyError(`token exchange for API ${api.name} is not available in this release; nothing was sent`);
  }
}

function takeLimits(api: ApiPolicy, calls: Map<string, number>, buckets: Map<string, TokenBucket>): void {
  const max = api.limits.maxCallsPerRun;
  const used = calls.get(api.name) ?? 0;
  if (max !== undefined && used >= max)
    throw new ApiPolicyError(`this run already made ${max} calls to API ${api.name} (limits.max_calls_per_run); nothing was sent`);
  const bucket = buckets.get(api.name);
  if (bucket && !bucket.take()) throw new ApiPolicyError(`API ${api.name} is over its rate limit (limits.rate_per_minute); try again later; nothing was sent`);
  calls.set(api.name, used + 1);
}

async function transmit(
  options: PolicyClientOptions,
  scope: RunScope,
  api: ApiPolicy,
  call: JudgedCall,
  url: string,
  method: string,
  headers: Record<string, string>,
  inflight: Set<(reason: unknown) => void>,
  template: string,
  body: ApiRequest["body"],
): Promise<ApiResponse> {
  const started = performance.now();
  const operation = call.operationId ?? template;
  let status = 0;
  let answer: Response | undefined;
  let stopped = false;
  const exchange = async (): Promise<ApiResponse> => {
    const response = await options.fetch(url, {
      method,
      headers,
      redirect: "manual",
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    answer = response;
    if (stopped) {
      await response.body?.cancel().catch(() => {});
      throw new ApiCallError("stopped");
    }
    status = response.status;
    if ((status >= 300 && status < 400) || response.type === "opaqueredirect") {
      await response.body?.cancel().catch(() => {});
      throw new ApiCallError(`API ${api.name} answered with a redirect, which is never followed`, { status });
    }
    const bytes = await readAnswer(response, api.limits.maxResponseBytes, () => stopped);
    const parsed = parseAnswer(bytes, response.headers.get("content-type"));
    // Headers are copied only if the tool reads them (most do not); Set-Cookie never reaches it.
    let copied: Record<string, string> | undefined;
    return {
      status,
      body: parsed,
      get headers() {
        if (!copied) {
          copied = Object.fromEntries(response.headers);
          delete copied["set-cookie"];
        }
        return copied;
      },
    };
  };

  // One deadline for the whole answer, headers and body (CONTRACT 5): a slow-drip upstream
  // cannot hold a run. Web fetch does not say when the connection is made, so the deadline runs
  // from the moment the call is handed over. No signal is passed to fetch (creating one per call
  // cost as much as the rest of the client on Node 20): when the deadline or the run's stop
  // wins, the answer's body is cancelled and the call fails at once; a connection still waiting
  // for headers is left to the runtime's own timeouts.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let fail: ((reason: unknown) => void) | undefined;
  scope.signal.throwIfAborted();
  const pending = exchange();
  try {
    // One promise settles first: the answer, the deadline, or the run's stop (see RunScope.inflight).
    return await new Promise<ApiResponse>((resolve, reject) => {
      fail = reject;
      timer = setTimeout(() => reject(new ApiCallError(`API ${api.name} did not answer within its timeout`)), api.timeouts.read);
      inflight.add(reject);
      pending.then(resolve, reject);
    });
  } catch (error) {
    if (scope.signal.aborted) throw scope.signal.reason;
    if ((error as { code?: string }).code === "api_call") throw error;
    throw new ApiCallError(`the call to API ${api.name} failed before an answer arrived`, { cause: error });
  } finally {
    stopped = true;
    clearTimeout(timer);
    if (fail) inflight.delete(fail);
    pending.catch(() => {});
    // An answer that arrived after the deadline is dropped, not read on in the background.
    if (answer && !answer.bodyUsed && answer.body && !answer.body.locked) void answer.body.cancel().catch(() => {});
    scope.logger.info("api call", { api: api.name, method, operation, status, duration_ms: Math.round(performance.now() - started) });
  }
}

