/**
 * The policy client: every outbound call a tool makes (spec 2.6, 7.4, 8). Everything is decided
 * before anything is sent: the request is read and judged (judge-request.ts: path checked and
 * filled, headers and query cleaned, the body read as JSON-RPC where the API speaks it), held for
 * approval when gated, its credential found (credential.ts) and the limits taken last; only then
 * is an approved call claimed, and sent (outbound.ts). The URL is built from the base URL and the
 * judged path by hand, never re-resolved, so the path that was judged is the path that is sent.
 * Redirects are not followed. Each call sent is a client span under its tool call's span (a call
 * to a peer agent: `invoke_agent <peer>`), and carries the request id and trace context per
 * PROPAGATE_TRACE_HEADERS (`tracing.inject`).
 */
import type { Principal } from "../auth/principal.js";
import type { Clock } from "../clock.js";
import { ApiCallError, ApiPolicyError, isAppError, LeaseLost } from "../errors.js";
import type { JsonValue } from "../json.js";
import type { Logger } from "../observability/logger.js";
import { ATTR } from "../observability/trace-attributes.js";
import { createTracing, NOOP_SPAN, propagationTarget, type TraceSpan, type Tracing } from "../observability/tracing.js";
import { type Credential, credentialFor, exchangedCredential, plainHttpElsewhere } from "./credential.js";
import { createDeadlines, Deadline, type Deadlines, keepIn, takeOut } from "./deadlines.js";
import type { ApiPolicy, Policy } from "./document.js";
import type { TokenExchanger } from "./exchange.js";
import { callTemplate } from "./call-template.js";
import type { ApprovalGate, HeldCall, HoldOutcome, RelayRecord } from "./gate.js";
import { type JudgedRequest, judgeRequest } from "./judge-request.js";
import type { LabelIndex } from "./labels.js";
import { TokenBucket } from "./limits.js";
import { exchange, type ExchangeState, type OutboundCall } from "./outbound.js";
import type { ApiRequest, ApiResponse, PeerApiClient } from "./types.js";
import { queryString } from "./wire.js";

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
  /** Exchanges the caller's token for `auth: exchange` APIs (exchange.ts); absent, they are refused. */
  readonly exchanger?: TokenExchanger;
  /**
   * Client spans and what calls carry (PROPAGATE_TRACE_HEADERS: X-Request-ID and, under OTLP,
   * traceparent/tracestate). Without one, a facade that traces nothing and propagates per
   * `propagate`.
   */
  readonly tracing?: Tracing;
  /**
   * PROPAGATE_TRACE_HEADERS (spec 6.4) when no `tracing` is given: which calls carry the
   * request's X-Request-ID: `peers` (default) calls to other agents and to forward/exchange APIs,
   * `all` every call, `off` none.
   */
  readonly propagate?: "peers" | "all" | "off";
  /** APP_ENV=dev: a credential to an A2A peer may go over plain http anywhere. */
  readonly dev?: boolean;
  /**
   * Spec 5.8: why a call to an API is refused for this caller before anything is decided (a peer
   * that is this agent, or an agent already in the delegation chain), or undefined. Absent: none.
   */
  readonly refusePeer?: (apiName: string, principal: Principal) => string | undefined;
  /**
   * The calls' read deadlines on one shared timer (deadlines.ts; default false: a timer a call).
   * Only where timers outlive a request; the client's `close()` then clears it.
   */
  readonly sharedDeadlines?: boolean;
}

export interface RunScope {
  readonly threadId: string;
  readonly runId: string;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** The run resumes after an approval decision. */
  readonly resumed: boolean;
  /** The user's own words of this run (a delegated run: those its caller forwarded), for peers. */
  readonly originWords?: string;
  /** The run's span (tracing on): kept with an approval the run waits on. */
  readonly span?: TraceSpan | undefined;
  /**
   * Whether the run still holds its thread's lease by its own clock: a process that stalled past
   * the lease's time (stopped, starved) does not, and another replica may have taken the run on.
   * Asked right before an approved call goes out.
   */
  readonly holdsLease?: () => boolean;
}

/** Which tool call the calls come from, and the model's words of that turn. */
export interface ToolCallScope {
  readonly tool: string;
  readonly toolCallId: string;
  readonly reason: string;
  /** The tool's own `redact=` fields (defineTool), masked in every call it makes like a call's own. */
  readonly redact?: readonly string[];
  /** The tool call's span (tracing on): the parent of the calls' client spans. */
  readonly span?: TraceSpan | undefined;
  /** The tool call's arguments: a path segment that one of them is never names the call (call-template.ts). */
  readonly args?: Readonly<Record<string, JsonValue>>;
}

export interface PolicyClient {
  /** A client for one run, then for one tool call of it. */
  forRun(scope: RunScope): (call: ToolCallScope) => PeerApiClient;
  /** Clears the shared deadline timer (the app is closing). */
  close(): void;
}

export function createPolicyClient(options: PolicyClientOptions): PolicyClient {
  const { policy, clock } = options;
  const tracing = options.tracing ?? createTracing({ capture: "metadata", propagate: options.propagate ?? "peers", agentName: "", agentVersion: "" });
  const buckets = new Map<string, TokenBucket>();
  for (const [name, api] of policy.apis)
    if (api.limits.ratePerMinute !== undefined) buckets.set(name, new TokenBucket(api.limits.ratePerMinute, clock));
  const deadlines = createDeadlines(options.sharedDeadlines === true);

  return {
    forRun(scope) {
      const run: RunCalls = { options, tracing, buckets, deadlines, scope, counts: new Map(), inflight: [] };
      // One listener per run, not per call: stopping the run fails every call still in flight.
      scope.signal.addEventListener("abort", () => {
        for (const call of run.inflight.slice()) call.fail(scope.signal.reason);
      }, { once: true });
      return (toolCall) => ({
        request: (apiName, request) => send(run, toolCall, apiName, request),
        relayDecision: (apiName, request, relay) => send(run, toolCall, apiName, request, relay),
        recorded: async () => (options.gate ? options.gate.recorded(scope.threadId, toolCall.toolCallId) : []),
        originWords: scope.originWords,
      });
    },
    close: () => deadlines.close(),
  };
}

/** What the calls of one run share: the client, the run, its call counts and its calls in flight. */
interface RunCalls {
  readonly options: PolicyClientOptions;
  readonly tracing: Tracing;
  /** Per process: one `rate_per_minute` bucket per API that has one. */
  readonly buckets: ReadonlyMap<string, TokenBucket>;
  readonly scope: RunScope;
  /** Calls this run made to each API (`max_calls_per_run`). */
  readonly counts: Map<string, number>;
  /** The calls in flight, each knowing its place in it (`InFlight.runSlot`): stopping the run fails them all at once. */
  readonly inflight: InFlight[];
  readonly deadlines: Deadlines;
}

/**
 * One call, in the order that matters: every refusal is decided before anything is sent. Not an
 * async function: a call with nothing to wait for (the gate lets it through at once, no token to
 * exchange, no approval to claim) is decided and handed to fetch in this same turn, and its
 * promise is its InFlight's own: 1.0-1.7 µs a call less on Node 20 than an async function
 * awaiting the gate (scripts/BENCHMARKS.md).
 */
function send(run: RunCalls, toolCall: ToolCallScope, apiName: string, request: ApiRequest, relay?: RelayRecord): Promise<ApiResponse> {
  const { options } = run;
  try {
    const judged = judgeRequest(options.policy, options.labels, apiName, withToolRedactions(request, toolCall.redact));
    refusePlainHttpPeer(options, judged.api);
    const peerRefusal = options.refusePeer?.(judged.api.name, run.scope.principal);
    if (peerRefusal !== undefined) throw new ApiPolicyError(`${peerRefusal}; nothing was sent`);
    const hold = holdForApproval(run, toolCall, relay ? { ...judged, held: { ...judged.held, relay } } : judged);
    if (isPromise(hold) || hold.kind !== "send" || hold.approvalId !== undefined || judged.api.auth === "exchange")
      return sendAfterWaits(run, toolCall, request, judged, hold);
    const credential = credentialFor(options.tokens, judged.api, run.scope.principal);
    takeLimits(run, judged.api);
    run.scope.signal.throwIfAborted();
    const [outbound, span] = prepare(run, toolCall, request, judged, hold.call, credential, undefined);
    return new InFlight(run, outbound, span).result;
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The rest of a call that waits: for the gate's look-up, its token's exchange or its approval's claim. */
async function sendAfterWaits(run: RunCalls, toolCall: ToolCallScope, request: ApiRequest, judged: JudgedRequest, holding: Hold | PromiseLike<Hold>): Promise<ApiResponse> {
  const { options } = run;
  const hold = await holding;
  if (hold.kind === "answered") return hold.response;
  const { api } = judged;
  let credential = credentialFor(options.tokens, api, run.scope.principal);
  takeLimits(run, api);
  // Exchanged after the gate and the limits, before the claim: a failed exchange leaves an
  // approved call unclaimed, and the issuer never hears of a call refused anyway (spec 5.8).
  if (api.auth === "exchange") credential = await exchangedCredential(options.exchanger, api, run.scope.principal, run.scope.logger, toolCall.span);
  const { call, approvalId } = hold;
  // A stopped run claims nothing: the call stays approved and unsent, and the run that resumes
  // the thread next sends it.
  run.scope.signal.throwIfAborted();
  // Claimed only now that every refusal is decided: a call claimed once is never sent again.
  if (approvalId !== undefined && !(await options.gate!.claim(approvalId)))
    throw new ApiPolicyError("the approved call was already sent once; it is not sent again");
  const [outbound, span] = prepare(run, toolCall, request, judged, call, credential, approvalId);
  if (approvalId === undefined) return new InFlight(run, outbound, span).result;
  // Fenced by the run's own clock as late as can be: a run that stalled past its lease between
  // the claim and here is no longer the only one on the thread, and the run now resuming it reads
  // the claimed call as unknown; sending it now would surprise everyone.
  if (run.scope.holdsLease?.() === false) {
    span.fail("LeaseLost");
    span.end();
    throw new LeaseLost("the run held the approved call past its thread's lease; it was not sent");
  }
  let response: ApiResponse;
  try {
    // Claimed: sent even if the run stopped during the claim, since only this run may send it now
    // and nothing else would; its answer is recorded for the next run to read.
    response = await new InFlight(run, outbound, span).result;
  } catch (error) {
    // Claimed and handed over, and no answer: it may have reached the API. Never sent again.
    await options.gate!.unanswered?.(approvalId);
    if (isAppError(error) && error.code === "api_call")
      throw new ApiCallError(`${error.message}; the approved call may have reached the API and is not sent again; a person should check with the API before asking again`, { cause: error });
    throw error;
  }
  await options.gate!.answered(approvalId, response);
  return response;
}

/** A decided call as it goes out (URL, the client's headers, the trace context), and its span. */
function prepare(
  run: RunCalls,
  toolCall: ToolCallScope,
  request: ApiRequest,
  judged: JudgedRequest,
  call: HeldCall,
  credential: Credential | undefined,
  approvalId: string | undefined,
): [OutboundCall, TraceSpan] {
  const { api } = judged;
  const headers = addClientHeaders(judged.headers, api, approvalId, credential, call.body);
  const base = run.options.baseUrls.get(api.name) ?? "";
  // The log names the call by its operation id, else its template; the span carries the template.
  const { operationId } = judged.call;
  const template = operationId === undefined || run.tracing.enabled ? callTemplate(request.path, judged, toolCall.args) : "";
  const operation = operationId ?? template;
  const span = run.tracing.enabled ? callSpan(run.tracing, toolCall.span, judged, template, base) : NOOP_SPAN;
  // The request id and trace context per PROPAGATE_TRACE_HEADERS; a header the tool set wins.
  // Approvals do not bind them (they are not part of the call shown): a resumed run sends its own.
  run.tracing.inject(headers, propagationTarget(api), span, run.scope.logger.requestId);
  const url = `${base}${judged.path}${queryString(call.query)}`;
  return [{ api, method: judged.method, url, headers, body: call.body, operation }, span];
}

/** What the gate made of the call: send it (the recorded call, once approved), or its earlier answer. */
type Hold =
  | { readonly kind: "send"; readonly call: HeldCall; readonly approvalId: string | undefined }
  | { readonly kind: "answered"; readonly response: ApiResponse };

/** The tool's own `redact=` fields and the call's, together. */
function withToolRedactions(request: ApiRequest, fromTool: readonly string[] | undefined): ApiRequest {
  if (fromTool === undefined || fromTool.length === 0) return request;
  return { ...request, redact: [...fromTool, ...(request.redact ?? [])] };
}

function ungated(judged: JudgedRequest): Hold {
  if (judged.gate) throw new ApiPolicyError(`the call needs approval (API ${judged.api.name}) and nothing here can hold it for a person; nothing was sent`);
  return { kind: "send", call: judged.held, approvalId: undefined };
}

/**
 * Hands the call to the gate, which pauses the run when a person has to approve it first; its
 * answer comes at once when it has nothing to look up. Without a gate nothing is held: a gated
 * call is refused right here.
 */
function holdForApproval(run: RunCalls, toolCall: ToolCallScope, judged: JudgedRequest): Hold | PromiseLike<Hold> {
  const { scope, options } = run;
  if (!options.gate) return ungated(judged);
  const outcome = options.gate.hold(judged.held, judged.gate, {
    threadId: scope.threadId,
    runId: scope.runId,
    tool: toolCall.tool,
    toolCallId: toolCall.toolCallId,
    reason: toolCall.reason,
    principal: scope.principal,
    signal: scope.signal,
    resumed: scope.resumed,
    span: toolCall.span,
    runSpan: scope.span,
  });
  return isPromise(outcome) ? outcome.then((decided) => holdOf(decided, judged)) : holdOf(outcome, judged);
}

function holdOf(outcome: HoldOutcome, judged: JudgedRequest): Hold {
  if (outcome.kind === "answered") return outcome;
  // Exactly the recorded call: what the person saw and approved, not what the replay rebuilt.
  if (outcome.kind === "send") return { kind: "send", call: outcome.call, approvalId: outcome.approvalId };
  return { kind: "send", call: judged.held, approvalId: undefined };
}

function isPromise<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown }).then === "function";
}

/** Spec 5.8: decided before the gate, so nobody is asked to approve a call that cannot be sent. */
function refusePlainHttpPeer(options: PolicyClientOptions, api: ApiPolicy): void {
  if (api.protocol !== "a2a" || api.auth === "none" || options.dev) return;
  if (plainHttpElsewhere(options.baseUrls.get(api.name) ?? ""))
    throw new ApiPolicyError(`API ${api.name} would send a credential over plain http to a host that is not loopback, a single-label name or a .svc name; nothing was sent`);
}

/** Both limits are read only where the API has them: nothing is counted for one without. */
function takeLimits(run: RunCalls, api: ApiPolicy): void {
  const { maxCallsPerRun: max, ratePerMinute } = api.limits;
  const used = max === undefined ? 0 : (run.counts.get(api.name) ?? 0);
  if (max !== undefined && used >= max)
    throw new ApiPolicyError(`this run already made ${max} calls to API ${api.name} (limits.max_calls_per_run); nothing was sent`);
  if (ratePerMinute !== undefined && !run.buckets.get(api.name)!.take())
    throw new ApiPolicyError(`API ${api.name} is over its rate limit (limits.rate_per_minute); try again later; nothing was sent`);
  if (max !== undefined) run.counts.set(api.name, used + 1);
}

/**
 * The client span of one call: `<METHOD> <path template>` (`invoke_agent <peer>` for a message to
 * a peer agent), never the query, whose values are data.
 */
function callSpan(tracing: Tracing, parent: TraceSpan | undefined, judged: JudgedRequest, template: string, base: string): TraceSpan {
  const { api, method, call } = judged;
  const server = URL.canParse(base) ? new URL(base) : undefined;
  const operation = call.operationId ?? call.rpcMethod;
  if (api.protocol === "a2a" && (call.rpcMethod === "SendMessage" || call.rpcMethod === "SendStreamingMessage")) {
    const span = tracing.peerSpan(api.name, parent).set(ATTR.httpMethod, method).set(ATTR.urlTemplate, template).set(ATTR.apiOperation, operation);
    return server ? span.set(ATTR.serverAddress, server.hostname).set(ATTR.serverPort, server.port === "" ? undefined : Number(server.port)) : span;
  }
  return tracing.clientSpan(api.name, method, template, parent, server, operation);
}

/** Adds the client's own headers to the tool's cleaned ones, in this order (later ones win). */
function addClientHeaders(
  headers: Record<string, string>,
  api: ApiPolicy,
  approvalId: string | undefined,
  credential: Credential | undefined,
  body: JsonValue | undefined,
): Record<string, string> {
  // The approval id names this one decision: an upstream that honours the key tells a
  // person's retry of the same approved call from a new call.
  if (approvalId !== undefined) headers["idempotency-key"] = approvalId;
  // The policy's credential overrides a tool-set header of that name.
  if (credential) headers[credential.header.toLowerCase()] = credential.value;
  if (body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json";
  if (api.limits.maxResponseBytes !== undefined) headers["accept-encoding"] = "gzip, deflate";
  return headers;
}

/**
 * One decided call in flight, sent as it is made: its answer, its deadline and its run's stop
 * race, and the first to come settles `result` and ends the call (its log line and span). The
 * run's stop was checked just before (in send or sendAfterWaits) with nothing awaited since, or
 * the call is an approved one this run claimed, sent whether or not the run has stopped since.
 *
 * One deadline for the whole answer, headers and body (CONTRACT 5): a slow-drip upstream cannot
 * hold a run. Web fetch does not say when the connection is made, so the deadline runs from the
 * moment the call is handed over. No signal is passed to fetch (creating one per call cost as
 * much as the rest of the client on Node 20): when the deadline or the run's stop wins, the
 * answer's body is cancelled and the call fails at once; a connection still waiting for headers
 * is left to the runtime's own timeouts.
 *
 * Not an async function awaiting a promise made for the race: settled from here, a call costs one
 * promise and one turn less (0.2-0.3 µs of the 6 µs the client adds on Node 20, measured with
 * both versions of the client in one process, calls in turn; scripts/BENCHMARKS.md).
 */
class InFlight extends Deadline implements ExchangeState {
  stopped = false;
  answer: Response | undefined = undefined;
  status = 0;
  /** Its place in its run's `inflight`, -1 once out of it. */
  runSlot = -1;
  readonly result: Promise<ApiResponse>;
  private readonly started = performance.now();
  private settle!: (answer: ApiResponse) => void;
  private reject!: (error: unknown) => void;

  constructor(
    private readonly run: RunCalls,
    private readonly call: OutboundCall,
    private readonly span: TraceSpan,
  ) {
    super();
    this.result = new Promise<ApiResponse>((resolve, reject) => {
      this.settle = resolve;
      this.reject = reject;
    });
    exchange(run.options.fetch, call, this).then(
      (answer) => this.answered(answer),
      (error: unknown) => this.fail(error),
    );
    run.deadlines.start(this, call.api.timeouts.read, this.started);
    keepIn(run.inflight, this, "runSlot");
  }

  expire(): void {
    this.fail(new ApiCallError(`API ${this.call.api.name} did not answer within its timeout`));
  }

  /** The call failed: its exchange, its deadline, or its run's stop (whichever came first). */
  fail(error: unknown): void {
    if (this.stopped) return;
    const { signal } = this.run.scope;
    this.span.fail(signal.aborted ? "cancelled" : error instanceof Error ? error.name : "Error");
    this.end();
    // An answer that arrived after the deadline is dropped, not read on in the background.
    const { answer } = this;
    if (answer && !answer.bodyUsed && answer.body && !answer.body.locked) void answer.body.cancel().catch(() => {});
    this.reject(signal.aborted ? signal.reason : callError(this.call.api.name, error));
  }

  private answered(answer: ApiResponse): void {
    if (this.stopped) return;
    this.end();
    this.settle(answer);
  }

  private end(): void {
    this.stopped = true;
    const { run, call, span, status } = this;
    run.deadlines.end(this);
    takeOut(run.inflight, this, "runSlot");
    run.scope.logger.info("api call", { api: call.api.name, method: call.method, operation: call.operation, status, duration_ms: Math.round(performance.now() - this.started) });
    if (status > 0) span.httpStatus(status);
    span.end();
  }
}

/** What a tool reads of a call that failed before its answer was read. */
function callError(api: string, error: unknown): unknown {
  if ((error as { code?: string }).code === "api_call") return error;
  const code = String((error as { cause?: { code?: unknown } }).cause?.code ?? (error as { code?: unknown }).code ?? "");
  if (/CONNECT_TIMEOUT/.test(code)) return new ApiCallError(`API ${api} could not be reached within its connect timeout`, { cause: error });
  return new ApiCallError(`the call to API ${api} failed before an answer arrived`, { cause: error });
}
