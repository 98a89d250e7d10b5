/**
 * The tracing facade the core calls (spec 6.4, CONTRACT 7), on @opentelemetry/api only: the
 * runtime entry hands in a Tracer (src/runtime/tracing.ts sets up the SDK and its exporter), or
 * none, and then every helper returns one shared no-op handle without allocating.
 *
 * Parents are passed explicitly (a handle, not the active context): workerd has no context
 * manager unless AsyncLocalStorage is switched on, and a run outlives the request that started it
 * (an approval resumes it later), so the span tree is built from the handles the code holds.
 *
 * TRACE_CAPTURE is applied here first: content (the user's message, prompts, completions, tool
 * arguments and results, error messages, /chat metadata) is handed to `content()` and the
 * helpers' content arguments, which do nothing, not even serialize, under `metadata`. The
 * exporters apply the same rule again (capture.ts) to whatever other code put on a span.
 */
import { type AttributeValue, type Attributes, context, type Context, isSpanContextValid, type Link, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { redactSecrets } from "./redact.js";
import { ATTR } from "./trace-attributes.js";
import { formatTraceparent, parseTraceparent } from "./trace-context.js";

/** Default OTEL_SERVICE_NAME and TRACEVENDOR_PROJECT (spec 6.4: "the project name"). */
export const PROJECT_NAME = "agent-service";

export type TraceCapture = "metadata" | "full";
export type TracePropagation = "peers" | "all" | "off";
/** Who an outbound call goes to: another agent, an API that receives the user's credentials, or any other. */
export type PropagationTarget = "peer" | "credentialed" | "other";

export interface TracingOptions {
  /** None: tracing is off and every helper is a no-op. */
  readonly tracer?: Tracer | undefined;
  readonly capture: TraceCapture;
  readonly propagate: TracePropagation;
  /** A2A_NAME: the run span is `invoke_agent <agentName>`. */
  readonly agentName: string;
  /** AGENT_VERSION (spec 9: reported in traces). */
  readonly agentVersion: string;
  /**
   * Whether W3C traceparent/tracestate cross process boundaries (default true, OTLP). False under
   * the tracing vendor: only the request id is passed on (spec 6.4).
   */
  readonly w3c?: boolean;
}

export interface RunSpanInput {
  readonly threadId: string;
  readonly runId: string;
  readonly principalHash?: string | undefined;
  /** The agent presenting a delegated request (spec 5.6); an agent id, not personal data. */
  readonly actor?: string | undefined;
  /** The traceparent of the run that paused (TraceSpan.traceparent()), when this run resumes it. */
  readonly resumes?: string | undefined;
  /** The user's message: exported only under `full`. */
  readonly message?: string | undefined;
  /** The /chat metadata object: exported only under `full` (spec 2.4). */
  readonly metadata?: unknown;
}

/** Header carriers: Headers, or a record whose names are lower case (the policy client's). */
export type HeaderBag = Headers | Record<string, string>;

/**
 * One span as the code holds it. All methods are safe on the no-op handle; `content()` drops its
 * value under TRACE_CAPTURE=metadata before anything is serialized.
 */
export class TraceSpan {
  private childCtx: Context | undefined;
  constructor(
    /** The API span, absent on the no-op handle. */
    readonly span: Span | undefined,
    private readonly full: boolean,
    private readonly kind: SpanKind,
    private readonly parentCtx: Context,
    /** The HTTP method of a server span (its name until the route is known). */
    private readonly method?: string,
  ) {}

  get recording(): boolean {
    return this.span !== undefined;
  }

  /** A structural attribute (ids, names, counts, statuses); undefined is skipped. */
  set(key: string, value: AttributeValue | undefined): this {
    if (this.span !== undefined && value !== undefined) this.span.setAttribute(key, value);
    return this;
  }

  /** A content attribute: set only under `full`; objects are written as JSON. */
  content(key: string, value: unknown): this {
    if (this.full && this.span !== undefined && value !== undefined) this.span.setAttribute(key, asText(value));
    return this;
  }

  /** Server spans: the matched route template names the span (`POST /chat`), never the path. */
  route(template: string): this {
    if (this.span === undefined) return this;
    this.span.updateName(`${this.method ?? "HTTP"} ${template}`);
    this.span.setAttribute(ATTR.httpRoute, template);
    return this;
  }

  /** The HTTP status: an error from 500 on a server span, from 400 on a client span (HTTP conventions). */
  httpStatus(status: number): this {
    if (this.span === undefined) return this;
    this.span.setAttribute(ATTR.httpStatus, status);
    if (status >= (this.kind === SpanKind.CLIENT ? 400 : 500)) {
      this.span.setAttribute(ATTR.errorType, String(status));
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return this;
  }

  /** Model token usage (GenAI conventions). */
  usage(inputTokens: number | undefined, outputTokens: number | undefined): this {
    if (this.span === undefined) return this;
    if (inputTokens !== undefined) this.span.setAttribute(ATTR.inputTokens, inputTokens);
    if (outputTokens !== undefined) this.span.setAttribute(ATTR.outputTokens, outputTokens);
    return this;
  }

  /**
   * Marks the span failed with an error type (a code or class name, e.g. `ProcessLost`). The
   * message goes out only under `full`, with secrets masked; under `metadata` not even the
   * status description holds it.
   */
  fail(errorType: string, message?: string): this {
    if (this.span === undefined) return this;
    this.span.setAttribute(ATTR.errorType, errorType);
    if (this.full && message !== undefined) {
      const text = redactSecrets(message);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: text });
      this.span.addEvent("exception", { "exception.type": errorType, [ATTR.exceptionMessage]: text });
    } else this.span.setStatus({ code: SpanStatusCode.ERROR });
    return this;
  }

  /** A timestamped event with structural attributes only. */
  event(name: string, attributes?: Attributes): this {
    if (this.span !== undefined) this.span.addEvent(name, attributes);
    return this;
  }

  end(): void {
    this.span?.end();
  }

  /**
   * This span as a W3C traceparent, for keeping beside a record (a paused run's approval) and
   * linking to later; undefined on the no-op handle.
   */
  traceparent(): string | undefined {
    if (this.span === undefined) return undefined;
    const sc = this.span.spanContext();
    return isSpanContextValid(sc) ? formatTraceparent(sc) : undefined;
  }

  /** The context children of this span start in. */
  childContext(): Context {
    if (this.span === undefined) return this.parentCtx;
    return (this.childCtx ??= trace.setSpan(this.parentCtx, this.span));
  }
}

/** The handle every helper returns with tracing off: one object, shared. */
export const NOOP_SPAN = new TraceSpan(undefined, false, SpanKind.INTERNAL, ROOT_CONTEXT);

export interface Tracing {
  readonly enabled: boolean;
  readonly capture: TraceCapture;
  /** A server span per request: named by its method until `route(template)` names it by route. */
  serverSpan(method: string, remote?: Context): TraceSpan;
  /** `invoke_agent <A2A_NAME>` for a run (or a run resumed after a decision, linked to the one that paused). */
  runSpan(run: RunSpanInput, parent?: TraceSpan): TraceSpan;
  /** `chat <model>` per model call; `system` and `messages` are content. */
  modelSpan(model: string, parent: TraceSpan | undefined, provider?: string, system?: string, messages?: unknown): TraceSpan;
  /** `execute_tool <tool>` per tool call; `args` is content. */
  toolSpan(tool: string, parent: TraceSpan | undefined, callId?: string, args?: unknown): TraceSpan;
  /** A client span per outbound API call: method and path template, never the query. */
  clientSpan(api: string, method: string, pathTemplate: string, parent: TraceSpan | undefined, server?: URL, operation?: string): TraceSpan;
  /** A run pausing for an approval, or a run resuming after its decision. */
  approvalSpan(phase: "pause" | "resume", parent: TraceSpan | undefined, approvalId: string, api?: string, decision?: string): TraceSpan;
  /** A token exchange at the issuer for an API (RFC 8693); `agent.token_exchange.outcome` is set by the caller. */
  tokenExchangeSpan(api: string, parent: TraceSpan | undefined, issuer?: URL): TraceSpan;
  /** A call to a peer agent (`invoke_agent <peer>`, client side). */
  peerSpan(peer: string, parent: TraceSpan | undefined): TraceSpan;
  /**
   * Outgoing propagation (PROPAGATE_TRACE_HEADERS): X-Request-ID and, under OTLP, traceparent and
   * tracestate of `from`; never baggage, and never over a header the tool set.
   */
  inject(headers: HeaderBag, target: PropagationTarget, from?: TraceSpan, requestId?: string): void;
  /** The remote parent of an incoming request, where PROPAGATE_TRACE_HEADERS continues one. */
  extract(headers: Headers, path: string): Context | undefined;
}

/** An outbound API's propagation target: peers (`protocol: a2a`) and APIs given the user's credentials. */
export function propagationTarget(api: { readonly protocol?: string | undefined; readonly auth?: string | undefined }): PropagationTarget {
  if (api.protocol === "a2a") return "peer";
  return api.auth === "forward" || api.auth === "exchange" ? "credentialed" : "other";
}

export function createTracing(options: TracingOptions): Tracing {
  return new FacadeTracing(options);
}

class FacadeTracing implements Tracing {
  private readonly tracer: Tracer | undefined;
  private readonly full: boolean;
  private readonly w3c: boolean;
  readonly capture: TraceCapture;
  private readonly propagate: TracePropagation;
  private readonly runName: string;
  private readonly agentName: string;
  private readonly agentVersion: string;

  constructor(o: TracingOptions) {
    this.tracer = o.tracer;
    this.capture = o.capture;
    this.full = o.capture === "full";
    this.w3c = o.w3c ?? true;
    this.propagate = o.propagate;
    this.agentName = o.agentName;
    this.agentVersion = o.agentVersion;
    this.runName = `invoke_agent ${o.agentName}`;
  }

  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  private start(name: string, kind: SpanKind, parent: Context, attributes: Attributes, links?: Link[], method?: string): TraceSpan {
    const span = this.tracer!.startSpan(name, links ? { kind, attributes, links } : { kind, attributes }, parent);
    return new TraceSpan(span, this.full, kind, parent, method);
  }

  /** A handle's context, else the active one (a context manager, when the runtime registered one). */
  private parentOf(parent: TraceSpan | undefined): Context {
    return parent?.span !== undefined ? parent.childContext() : context.active();
  }

  serverSpan(method: string, remote?: Context): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    return this.start(method, SpanKind.SERVER, remote ?? ROOT_CONTEXT, { [ATTR.httpMethod]: method }, undefined, method);
  }

  runSpan(run: RunSpanInput, parent?: TraceSpan): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = {
      [ATTR.operation]: "invoke_agent",
      [ATTR.agentName]: this.agentName,
      [ATTR.agentVersion]: this.agentVersion,
      [ATTR.version]: this.agentVersion,
      [ATTR.conversationId]: run.threadId,
      [ATTR.runId]: run.runId,
    };
    if (run.principalHash !== undefined) attributes[ATTR.principalHash] = run.principalHash;
    if (run.actor !== undefined) attributes[ATTR.actor] = run.actor;
    const paused = parseTraceparent(run.resumes);
    const links = paused ? [{ context: paused, attributes: { [ATTR.linkReason]: "resumes_paused_run" } }] : undefined;
    const span = this.start(this.runName, SpanKind.INTERNAL, this.parentOf(parent), attributes, links);
    if (this.full) {
      if (run.message !== undefined) span.content(ATTR.inputMessages, [{ role: "user", parts: [{ type: "text", content: run.message }] }]);
      if (run.metadata !== undefined) span.content(ATTR.chatMetadata, run.metadata);
    }
    return span;
  }

  modelSpan(model: string, parent: TraceSpan | undefined, provider?: string, system?: string, messages?: unknown): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.operation]: "chat", [ATTR.requestModel]: model };
    if (provider !== undefined) attributes[ATTR.providerName] = provider;
    const span = this.start(`chat ${model}`, SpanKind.CLIENT, this.parentOf(parent), attributes);
    if (this.full) span.content(ATTR.systemInstructions, system).content(ATTR.inputMessages, messages);
    return span;
  }

  toolSpan(tool: string, parent: TraceSpan | undefined, callId?: string, args?: unknown): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.operation]: "execute_tool", [ATTR.toolName]: tool, [ATTR.toolType]: "function" };
    if (callId !== undefined) attributes[ATTR.toolCallId] = callId;
    const span = this.start(`execute_tool ${tool}`, SpanKind.INTERNAL, this.parentOf(parent), attributes);
    if (this.full) span.content(ATTR.toolArguments, args);
    return span;
  }

  clientSpan(api: string, method: string, pathTemplate: string, parent: TraceSpan | undefined, server?: URL, operation?: string): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.httpMethod]: method, [ATTR.urlTemplate]: pathTemplate, [ATTR.apiName]: api };
    if (server !== undefined) addServer(attributes, server);
    if (operation !== undefined) attributes[ATTR.apiOperation] = operation;
    return this.start(`${method} ${pathTemplate}`, SpanKind.CLIENT, this.parentOf(parent), attributes);
  }

  approvalSpan(phase: "pause" | "resume", parent: TraceSpan | undefined, approvalId: string, api?: string, decision?: string): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.approvalId]: approvalId };
    if (api !== undefined) attributes[ATTR.apiName] = api;
    if (decision !== undefined) attributes[ATTR.approvalDecision] = decision;
    const name = api === undefined ? `approval_${phase}` : `approval_${phase} ${api}`;
    return this.start(name, SpanKind.INTERNAL, this.parentOf(parent), attributes);
  }

  tokenExchangeSpan(api: string, parent: TraceSpan | undefined, issuer?: URL): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.apiName]: api };
    if (issuer !== undefined) addServer(attributes, issuer);
    return this.start(`token_exchange ${api}`, SpanKind.CLIENT, this.parentOf(parent), attributes);
  }

  peerSpan(peer: string, parent: TraceSpan | undefined): TraceSpan {
    if (this.tracer === undefined) return NOOP_SPAN;
    const attributes: Attributes = { [ATTR.operation]: "invoke_agent", [ATTR.agentName]: peer, [ATTR.apiName]: peer };
    return this.start(`invoke_agent ${peer}`, SpanKind.CLIENT, this.parentOf(parent), attributes);
  }

  inject(headers: HeaderBag, target: PropagationTarget, from?: TraceSpan, requestId?: string): void {
    if (this.propagate === "off" || (this.propagate === "peers" && target === "other")) return;
    if (requestId !== undefined) setIfAbsent(headers, "x-request-id", requestId);
    if (!this.w3c || from?.span === undefined || hasHeader(headers, "traceparent")) return;
    const sc = from.span.spanContext();
    if (!isSpanContextValid(sc)) return;
    setHeader(headers, "traceparent", formatTraceparent(sc));
    const state = sc.traceState?.serialize();
    if (state) setIfAbsent(headers, "tracestate", state);
  }

  extract(headers: Headers, path: string): Context | undefined {
    if (this.tracer === undefined || !this.w3c || this.propagate === "off") return undefined;
    if (this.propagate === "peers" && path !== "/a2a" && !path.startsWith("/a2a/")) return undefined;
    const sc = parseTraceparent(headers.get("traceparent"), headers.get("tracestate"));
    return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : undefined;
  }
}

function addServer(attributes: Attributes, url: URL): void {
  attributes[ATTR.serverAddress] = url.hostname;
  if (url.port !== "") attributes[ATTR.serverPort] = Number(url.port);
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function hasHeader(headers: HeaderBag, name: string): boolean {
  return headers instanceof Headers ? headers.has(name) : headers[name] !== undefined;
}

function setHeader(headers: HeaderBag, name: string, value: string): void {
  if (headers instanceof Headers) headers.set(name, value);
  else headers[name] = value;
}

function setIfAbsent(headers: HeaderBag, name: string, value: string): void {
  if (!hasHeader(headers, name)) setHeader(headers, name, value);
}
