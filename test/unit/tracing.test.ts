import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { captureFilter } from "../../src/observability/capture.js";
import type { ExportSpan } from "../../src/observability/span-data.js";
import { ATTR } from "../../src/observability/trace-attributes.js";
import { parseTraceparent } from "../../src/observability/trace-context.js";
import { createTracing, NOOP_SPAN, propagationTarget, type TraceCapture, type TracePropagation } from "../../src/observability/tracing.js";
import { everyText, memoryTracer } from "../support/memory-tracer.js";

const SECRET_MESSAGE = "my card number is 4111-1111";
const SECRET_ARGS = { order: "secret-order-args" };
const SECRET_RESULT = "secret-tool-result";
const SECRET_COMPLETION = "secret-completion";
const SECRET_PROMPT = "secret-system-prompt";
const SECRET_ERROR = "secret-error-message";
const SECRET_METADATA = { note: "secret-chat-metadata" };
const SECRETS = [SECRET_MESSAGE, "secret-order-args", SECRET_RESULT, SECRET_COMPLETION, SECRET_PROMPT, SECRET_ERROR, "secret-chat-metadata"];

const base = { agentName: "orders", agentVersion: "1.2.3" } as const;

/** A chat as the core would trace it: request, run, model call, tool call with an API call, a failure. */
function tracedChat(capture: TraceCapture) {
  const mem = memoryTracer();
  const t = createTracing({ ...base, tracer: mem.tracer, capture, propagate: "peers" });
  const server = t.serverSpan("POST").route("/chat");
  const run = t.runSpan({ threadId: "thread-1", runId: "run-1", principalHash: "ph-1", actor: "agent-a", message: SECRET_MESSAGE, metadata: SECRET_METADATA }, server);
  const model = t.modelSpan("gpt-test", run, "openai", SECRET_PROMPT, [{ role: "user", content: SECRET_MESSAGE }]);
  model.usage(12, 34).content(ATTR.outputMessages, SECRET_COMPLETION).end();
  const tool = t.toolSpan("create_order", run, "call-1", SECRET_ARGS);
  const client = t.clientSpan("orders", "POST", "/orders/{id}", tool, new URL("http://orders.internal:8080/orders/7?token=abc"));
  client.httpStatus(502).end();
  tool.content(ATTR.toolResult, SECRET_RESULT).fail("UpstreamError", `${SECRET_ERROR} Bearer abc.def.ghi`).end();
  run.set(ATTR.runStatus, "ok").end();
  server.httpStatus(200).end();
  return mem;
}

describe("the tracing facade", () => {
  it("with no tracer, every helper returns the one shared no-op handle", () => {
    const t = createTracing({ ...base, capture: "full", propagate: "all" });
    expect(t.enabled).toBe(false);
    const spans = [
      t.serverSpan("GET"),
      t.runSpan({ threadId: "t", runId: "r" }),
      t.modelSpan("m", undefined),
      t.toolSpan("x", undefined),
      t.clientSpan("api", "GET", "/", undefined),
      t.approvalSpan("pause", undefined, "ap-1"),
      t.tokenExchangeSpan("api", undefined),
      t.peerSpan("peer", undefined),
    ];
    for (const s of spans) expect(s).toBe(NOOP_SPAN);
    expect(NOOP_SPAN.route("/x").set("a", 1).content("b", "c").usage(1, 2).httpStatus(500).fail("E", "m").event("e").recording).toBe(false);
    expect(NOOP_SPAN.traceparent()).toBeUndefined();
    NOOP_SPAN.end();
    expect(t.extract(new Headers({ traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` }), "/a2a/x")).toBeUndefined();
  });

  it("builds the span tree of a chat with the HTTP and GenAI conventions", () => {
    const mem = tracedChat("metadata");
    const server = mem.byName("POST /chat");
    const run = mem.byName("invoke_agent orders");
    const model = mem.byName("chat gpt-test");
    const tool = mem.byName("execute_tool create_order");
    const client = mem.byName("POST /orders/{id}");
    expect(server.kind).toBe(SpanKind.SERVER);
    expect(server.attributes).toMatchObject({ [ATTR.httpMethod]: "POST", [ATTR.httpRoute]: "/chat", [ATTR.httpStatus]: 200 });
    expect(run.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": "thread-1",
      "gen_ai.agent.name": "orders",
      "agent.run.id": "run-1",
      "agent.principal.hash": "ph-1",
      "agent.actor": "agent-a",
      "agent.version": "1.2.3",
      "agent.run.status": "ok",
    });
    expect(model.kind).toBe(SpanKind.CLIENT);
    expect(model.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    expect(model.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "gpt-test",
      "gen_ai.provider.name": "openai",
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 34,
    });
    expect(tool.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_order", "gen_ai.tool.call.id": "call-1", "error.type": "UpstreamError" });
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
    expect(client.kind).toBe(SpanKind.CLIENT);
    expect(client.parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
    expect(client.attributes).toEqual({
      "http.request.method": "POST",
      "url.template": "/orders/{id}",
      "agent.api.name": "orders",
      "server.address": "orders.internal",
      "server.port": 8080,
      "http.response.status_code": 502,
      "error.type": "502",
    });
    expect(new Set(mem.spans().map((s) => s.spanContext().traceId)).size).toBe(1);
  });

  it("under metadata no span holds the message, prompts, completions, tool arguments or results, error messages or /chat metadata", () => {
    const mem = tracedChat("metadata");
    expect(mem.spans()).toHaveLength(5);
    for (const span of mem.spans()) {
      const text = everyText(span);
      for (const secret of SECRETS) expect(text).not.toContain(secret);
      expect(text).not.toContain("token=abc");
    }
    expect(mem.byName("execute_tool create_order").status.message).toBeUndefined();
  });

  it("under full they are there, error messages with secrets masked", () => {
    const mem = tracedChat("full");
    const all = mem.spans().map(everyText).join("\n");
    for (const secret of SECRETS) expect(all).toContain(secret);
    const run = mem.byName("invoke_agent orders");
    expect(JSON.parse(run.attributes[ATTR.inputMessages] as string)).toEqual([{ role: "user", parts: [{ type: "text", content: SECRET_MESSAGE }] }]);
    expect(JSON.parse(run.attributes[ATTR.chatMetadata] as string)).toEqual(SECRET_METADATA);
    const tool = mem.byName("execute_tool create_order");
    expect(JSON.parse(tool.attributes[ATTR.toolArguments] as string)).toEqual(SECRET_ARGS);
    expect(tool.status.message).toContain(SECRET_ERROR);
    expect(tool.status.message).not.toContain("abc.def.ghi");
    expect(tool.events.map((e) => e.name)).toEqual(["exception"]);
    expect(all).not.toContain("token=abc");
  });

  it("a resumed run links to the run that paused; approval, token exchange and peer spans", () => {
    const mem = memoryTracer();
    const t = createTracing({ ...base, tracer: mem.tracer, capture: "metadata", propagate: "peers" });
    const paused = t.runSpan({ threadId: "t", runId: "r1" });
    t.approvalSpan("pause", paused, "ap-1", "orders").end();
    const pausedAt = paused.traceparent()!;
    paused.set(ATTR.runStatus, "awaiting_approval").end();
    expect(pausedAt).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const decision = t.serverSpan("POST").route("/threads/{thread_id}/approvals/{approval_id}");
    const resumed = t.runSpan({ threadId: "t", runId: "r2", resumes: pausedAt }, decision);
    t.approvalSpan("resume", resumed, "ap-1", "orders", "approved").end();
    t.tokenExchangeSpan("orders", resumed, new URL("https://issuer.example/token")).set(ATTR.exchangeOutcome, "issued").end();
    const peer = t.peerSpan("billing", resumed);
    t.clientSpan("billing", "POST", "/a2a/billing", peer).httpStatus(200).end();
    peer.end();
    resumed.end();
    decision.end();

    const r2 = mem.spans().find((s) => s.attributes[ATTR.runId] === "r2")!;
    expect(r2.links).toHaveLength(1);
    expect(r2.links[0]!.context.spanId).toBe(parseTraceparent(pausedAt)!.spanId);
    expect(r2.links[0]!.attributes).toEqual({ [ATTR.linkReason]: "resumes_paused_run" });
    expect(mem.byName("approval_pause orders").attributes).toEqual({ [ATTR.approvalId]: "ap-1", [ATTR.apiName]: "orders" });
    expect(mem.byName("approval_resume orders").attributes).toMatchObject({ [ATTR.approvalDecision]: "approved" });
    expect(mem.byName("token_exchange orders").attributes).toEqual({ [ATTR.apiName]: "orders", [ATTR.serverAddress]: "issuer.example", [ATTR.exchangeOutcome]: "issued" });
    const peerSpan = mem.byName("invoke_agent billing");
    expect(peerSpan.kind).toBe(SpanKind.CLIENT);
    expect(mem.byName("POST /a2a/billing").parentSpanContext?.spanId).toBe(peerSpan.spanContext().spanId);
  });
});

describe("W3C propagation", () => {
  const remote = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" };
  const incoming = () => new Headers({ traceparent: `00-${remote.traceId}-${remote.spanId}-01`, tracestate: "vendor=x", baggage: "user=alice" });

  function outgoing(propagate: TracePropagation, w3c = true) {
    const mem = memoryTracer();
    const t = createTracing({ ...base, tracer: mem.tracer, capture: "metadata", propagate, w3c });
    return { t, span: t.serverSpan("POST") };
  }

  it.each([
    ["peers", "peer", true],
    ["peers", "credentialed", true],
    ["peers", "other", false],
    ["all", "other", true],
    ["all", "peer", true],
    ["off", "peer", false],
    ["off", "credentialed", false],
  ] as const)("under %s a call to a %s target carries the headers: %s", (propagate, target, carried) => {
    const { t, span } = outgoing(propagate);
    const headers = new Headers();
    t.inject(headers, target, span, "req-1");
    expect(headers.get("traceparent") !== null).toBe(carried);
    expect(headers.get("x-request-id")).toBe(carried ? "req-1" : null);
    if (carried) expect(headers.get("traceparent")).toBe(`00-${span.span!.spanContext().traceId}-${span.span!.spanContext().spanId}-01`);
    expect(headers.has("baggage")).toBe(false);
  });

  it("never overwrites a header the tool set, and writes into a lower-case record too", () => {
    const { t, span } = outgoing("all");
    const tools = new Headers({ traceparent: "00-11111111111111111111111111111111-2222222222222222-01", "X-Request-ID": "tool-id" });
    t.inject(tools, "peer", span, "req-1");
    expect(tools.get("traceparent")).toBe("00-11111111111111111111111111111111-2222222222222222-01");
    expect(tools.get("x-request-id")).toBe("tool-id");
    expect(tools.has("tracestate")).toBe(false);
    const record: Record<string, string> = {};
    t.inject(record, "other", span, "req-2");
    expect(Object.keys(record).sort()).toEqual(["traceparent", "x-request-id"]);
  });

  it("passes tracestate on with the trace it continues", () => {
    const { t } = outgoing("all");
    const server = t.serverSpan("POST", t.extract(incoming(), "/chat"));
    const headers = new Headers();
    t.inject(headers, "peer", server);
    expect(headers.get("tracestate")).toBe("vendor=x");
    expect(headers.get("traceparent")).toContain(remote.traceId);
  });

  it("under the tracing vendor only the request id is passed on, and no trace is continued", () => {
    const { t, span } = outgoing("all", false);
    const headers = new Headers();
    t.inject(headers, "peer", span, "req-1");
    expect([...headers.keys()]).toEqual(["x-request-id"]);
    expect(t.extract(incoming(), "/a2a/x")).toBeUndefined();
  });

  it("continues an incoming trace on /a2a/... under peers, everywhere under all, nowhere under off", () => {
    const cases: [TracePropagation, string, boolean][] = [
      ["peers", "/a2a/orders", true],
      ["peers", "/chat", false],
      ["peers", "/a2aX", false],
      ["all", "/chat", true],
      ["off", "/a2a/orders", false],
    ];
    for (const [propagate, path, continued] of cases) {
      const { t } = outgoing(propagate);
      const ctx = t.extract(incoming(), path);
      expect(ctx !== undefined, `${propagate} ${path}`).toBe(continued);
      const span = t.serverSpan("POST", ctx);
      expect(span.span!.spanContext().traceId === remote.traceId).toBe(continued);
      if (continued) expect(trace.getSpanContext(ctx!)?.isRemote).toBe(true);
    }
  });

  it("ignores a malformed traceparent", () => {
    const { t } = outgoing("all");
    for (const bad of [
      `00-${"0".repeat(32)}-${remote.spanId}-01`,
      `00-${remote.traceId}-${"0".repeat(16)}-01`,
      `ff-${remote.traceId}-${remote.spanId}-01`,
      `00-${remote.traceId}-${remote.spanId}-01-extra`,
      `00-${remote.traceId.toUpperCase()}-${remote.spanId}-01`,
      "garbage",
    ])
      expect(t.extract(new Headers({ traceparent: bad }), "/chat"), bad).toBeUndefined();
    // A later version may append fields.
    expect(t.extract(new Headers({ traceparent: `01-${remote.traceId}-${remote.spanId}-01-more` }), "/chat")).toBeDefined();
  });

  it("names propagation targets from an API's protocol and auth", () => {
    expect(propagationTarget({ protocol: "a2a", auth: "none" })).toBe("peer");
    expect(propagationTarget({ protocol: "http", auth: "exchange" })).toBe("credentialed");
    expect(propagationTarget({ auth: "forward" })).toBe("credentialed");
    expect(propagationTarget({ protocol: "http", auth: "static" })).toBe("other");
  });
});

describe("the capture filter before export", () => {
  const tracer = () => memoryTracer();

  function spanWith(attributes: Record<string, string | number>, events: { name: string; attributes?: Record<string, string> }[] = [], message?: string): ExportSpan {
    const mem = tracer();
    const s = mem.tracer.startSpan("s", { attributes });
    for (const e of events) s.addEvent(e.name, e.attributes);
    s.setStatus(message ? { code: SpanStatusCode.ERROR, message } : { code: SpanStatusCode.UNSET });
    s.end();
    return mem.spans()[0]!;
  }

  it("passes a clean span through as is", () => {
    const span = spanWith({ [ATTR.runId]: "r", [ATTR.inputTokens]: 3 });
    expect(captureFilter("metadata")(span)).toBe(span);
  });

  it("drops content under metadata and credentials and queries in both modes, keeping the span's ids", () => {
    const attributes = {
      [ATTR.runId]: "r",
      [ATTR.inputTokens]: 3,
      [ATTR.inputMessages]: "words",
      "gen_ai.prompt.0.content": "old-style prompt",
      "http.request.header.authorization": "Bearer x",
      "url.full": "https://x/y?token=1",
      "agent.api_key": "k",
    };
    const events: { name: string; attributes: Record<string, string> }[] = [{ name: "gen_ai.user.message", attributes: { content: "words" } }, { name: "exception", attributes: { "exception.type": "E", "exception.message": "why" } }];
    const span = spanWith(attributes, events, "error text");
    const meta = captureFilter("metadata")(span);
    expect(meta.attributes).toEqual({ [ATTR.runId]: "r", [ATTR.inputTokens]: 3 });
    expect(meta.events.map((e) => [e.name, e.attributes])).toEqual([["exception", { "exception.type": "E" }]]);
    expect(meta.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(meta.spanContext()).toEqual(span.spanContext());
    expect(span.attributes[ATTR.inputMessages]).toBe("words");

    const full = captureFilter("full")(span);
    expect(Object.keys(full.attributes).sort()).toEqual([ATTR.inputMessages, ATTR.inputTokens, ATTR.runId, "gen_ai.prompt.0.content"].sort());
    expect(full.events).toHaveLength(2);
    expect(full.status.message).toBe("error text");
  });
});
