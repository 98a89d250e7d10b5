/**
 * The Node entry's trace export (src/runtime/tracing.ts) against a loopback OTLP/HTTP receiver:
 * the span recorder, the SDK's batch processor and OTLP exporter, protobuf and JSON, sampling, the span tree the facade builds,
 * TRACE_CAPTURE applied before export, and a receiver that is down (nothing thrown, nothing slowed,
 * drops counted, one warning per outage).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { createSpanDropCounter } from "../../src/observability/export-health.js";
import { createLogger } from "../../src/observability/logger.js";
import type { TraceExport } from "../../src/observability/trace-export.js";
import { ATTR } from "../../src/observability/trace-attributes.js";
import { createTracing, type TraceCapture } from "../../src/observability/tracing.js";
import { nodeTraceExport } from "../../src/runtime/tracing.js";
import { flushAfterResponse, workerTraceExport } from "../../src/runtime/worker-tracing.js";
import { parseSettings } from "../../src/settings/parse.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});

function setup(env: Record<string, string>) {
  const lines: Record<string, unknown>[] = [];
  const settings = parseSettings({ API_KEY: "k".repeat(20), MODEL_PROVIDER: "fake", MODEL_NAME: "fake", TRACING_ENABLED: "true", OTEL_BSP_SCHEDULE_DELAY: "20", ...env });
  const logger = createLogger({ level: "INFO", format: "json", write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const dropped = createSpanDropCounter();
  const exp: TraceExport = nodeTraceExport({ settings, logger, dropped });
  open.push({ close: () => exp.shutdown() });
  const tracing = createTracing({ tracer: exp.tracer, capture: settings.TRACE_CAPTURE, propagate: settings.PROPAGATE_TRACE_HEADERS, agentName: settings.A2A_NAME, agentVersion: settings.AGENT_VERSION, w3c: exp.w3c });
  const warnings = () => lines.filter((l) => l.level === "WARNING");
  return { exp, tracing, dropped, lines, warnings };
}

async function receiver(): Promise<OtlpReceiver> {
  const rx = await startOtlpReceiver();
  open.push(rx);
  return rx;
}

/** A chat with a tool call that pauses for an approval, then the decision that resumes it. */
function chatWithApprovalAndResume(tracing: ReturnType<typeof createTracing>) {
  const chat = tracing.serverSpan("POST").route("/chat");
  const run = tracing.runSpan({ threadId: "th-1", runId: "run-1", principalHash: "ph", message: "ship order 7 to Alice" }, chat);
  tracing.modelSpan("fake", run, "fake").usage(5, 7).content(ATTR.outputMessages, "calling the tool").end();
  const tool = tracing.toolSpan("create_order", run, "call-1", { customer: "Alice" });
  tracing.approvalSpan("pause", tool, "ap-1", "orders").end();
  tool.end();
  const paused = run.traceparent();
  run.set(ATTR.runStatus, "awaiting_approval").end();
  chat.httpStatus(200).end();

  const decide = tracing.serverSpan("POST").route("/threads/{thread_id}/approvals/{approval_id}");
  const resumed = tracing.runSpan({ threadId: "th-1", runId: "run-2", principalHash: "ph", resumes: paused }, decide);
  tracing.approvalSpan("resume", resumed, "ap-1", "orders", "approved").end();
  const call = tracing.clientSpan("orders", "POST", "/orders", resumed, new URL("http://127.0.0.1:9/orders?secret=1"));
  call.httpStatus(201).end();
  resumed.set(ATTR.runStatus, "ok").end();
  decide.httpStatus(200).end();
}

const byName = (spans: ReceivedSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

describe.each([
  ["http/protobuf", "application/x-protobuf"],
  ["http/json", "application/json"],
] as const)("OTLP export over %s", (protocol, contentType) => {
  it.each(["metadata", "full"] as TraceCapture[])("sends the span tree of a chat, a pause and its resume (TRACE_CAPTURE=%s)", async (capture) => {
    const rx = await receiver();
    const { exp, tracing, dropped } = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, TRACE_CAPTURE: capture, OTEL_SERVICE_NAME: "svc-test", AGENT_VERSION: "9.9.9", A2A_NAME: "orders-agent", OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=acme" });
    chatWithApprovalAndResume(tracing);
    const spans = await rx.waitFor((s) => s.length >= 9);
    await exp.flush();
    expect(spans).toHaveLength(9);
    expect(rx.requests.every((r) => r.contentType === contentType && r.path === "/v1/traces")).toBe(true);
    expect(rx.requests[0]!.headers["x-tenant"]).toBe("acme");
    expect(spans[0]!.resource).toMatchObject({ "service.name": "svc-test", "service.version": "9.9.9" });

    const chat = byName(spans, "POST /chat");
    const run = spans.find((s) => s.attributes["agent.run.id"] === "run-1")!;
    const model = byName(spans, "chat fake");
    const tool = byName(spans, "execute_tool create_order");
    const pause = byName(spans, "approval_pause orders");
    expect(chat.kind).toBe(2);
    expect(run.name).toBe("invoke_agent orders-agent");
    expect(run.parentSpanId).toBe(chat.spanId);
    expect(run.attributes).toMatchObject({ "gen_ai.conversation.id": "th-1", "agent.version": "9.9.9", "agent.run.status": "awaiting_approval" });
    expect(model.parentSpanId).toBe(run.spanId);
    expect(model.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 7 });
    expect(tool.parentSpanId).toBe(run.spanId);
    expect(pause.parentSpanId).toBe(tool.spanId);

    const decide = byName(spans, "POST /threads/{thread_id}/approvals/{approval_id}");
    const resumed = spans.find((s) => s.attributes["agent.run.id"] === "run-2")!;
    expect(resumed.parentSpanId).toBe(decide.spanId);
    expect(resumed.links).toEqual([{ traceId: run.traceId, spanId: run.spanId, attributes: { [ATTR.linkReason]: "resumes_paused_run" } }]);
    expect(byName(spans, "approval_resume orders").parentSpanId).toBe(resumed.spanId);
    const call = byName(spans, "POST /orders");
    expect(call.kind).toBe(3);
    expect(call.attributes).toEqual({ "http.request.method": "POST", "url.template": "/orders", "agent.api.name": "orders", "server.address": "127.0.0.1", "server.port": 9, "http.response.status_code": 201 });

    const text = JSON.stringify(spans);
    for (const content of ["ship order 7 to Alice", "calling the tool", "Alice"]) expect(text.includes(content), content).toBe(capture === "full");
    expect(text).not.toContain("secret=1");
    expect(dropped.get({ reason: "export_failed" }) + dropped.get({ reason: "queue_full" })).toBe(0);
  });
});

describe("OTEL_TRACES_SAMPLER through the Node entry's factory", () => {
  it("always_off exports nothing, yet passes the trace on to peers marked not sampled; the default exports every span", async () => {
    const rx = await receiver();
    const off = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_TRACES_SAMPLER: "always_off" });
    const headers: Record<string, string> = {};
    const span = off.tracing.serverSpan("POST").route("/chat");
    off.tracing.inject(headers, "peer", span, "req-1");
    span.end();
    await off.exp.flush();
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(rx.requests).toHaveLength(0);

    const on = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url });
    on.tracing.serverSpan("POST").route("/chat").end();
    await on.exp.flush();
    expect(rx.spans.map((s) => s.name)).toEqual(["POST /chat"]);
  });
});

/** A loopback port nothing listens on. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe("a receiver that is down", () => {
  it("never throws to or slows the caller; the spans are counted as dropped and told in one warning", async () => {
    const port = await deadPort();
    const { exp, tracing, dropped, warnings } = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "300", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "4" });
    const started = performance.now();
    for (let i = 0; i < 5; i++) chatWithApprovalAndResume(tracing);
    expect(performance.now() - started).toBeLessThan(100);
    await expect(exp.flush()).resolves.toBeUndefined();
    await expect.poll(() => dropped.get({ reason: "export_failed" }), { timeout: 5000 }).toBe(45);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]!.message).toMatch(/Trace export to the OTLP receiver is failing \(ECONNREFUSED\)/);
    expect(JSON.stringify(warnings())).not.toContain(String(port));
  });

  it("drops what its bounded queue cannot hold, counted", async () => {
    const port = await deadPort();
    const { exp, tracing, dropped } = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_TIMEOUT: "300", OTEL_BSP_MAX_QUEUE_SIZE: "5", OTEL_BSP_SCHEDULE_DELAY: "60000" });
    for (let i = 0; i < 20; i++) tracing.toolSpan("t", undefined).end();
    // The fifth span fills a batch, which the processor hands over at once; five more wait.
    expect(dropped.get({ reason: "queue_full" })).toBe(10);
    await exp.flush();
    await expect.poll(() => dropped.get({ reason: "export_failed" })).toBe(10);
  });

  it("warns once per outage and tells when export works again", async () => {
    const rx = await receiver();
    rx.status = 500;
    const { exp, tracing, dropped, lines, warnings } = setup({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url });
    for (let round = 0; round < 3; round++) {
      tracing.toolSpan("t", undefined).end();
      await exp.flush();
    }
    expect(dropped.get({ reason: "export_failed" })).toBe(3);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]!.message).toContain("HTTP 500");
    rx.status = 200;
    tracing.toolSpan("t", undefined).end();
    await exp.flush();
    expect(rx.spans).toHaveLength(1);
    expect(lines.filter((l) => String(l.message).includes("works again"))).toHaveLength(1);
    rx.status = 500;
    tracing.toolSpan("t", undefined).end();
    await exp.flush();
    expect(warnings()).toHaveLength(2);
  });
});

describe("the tracing vendor through the Node entry's factory", () => {
  it("sends run trees to TRACEVENDOR_ENDPOINT with the key, and passes on no traceparent", async () => {
    const bodies: string[] = [];
    const keys: unknown[] = [];
    const server = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        bodies.push(body);
        keys.push(req.headers["x-api-key"]);
        res.end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    open.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const { exp, tracing } = setup({ TRACEVENDOR_API_KEY: "vk-123", TRACEVENDOR_ENDPOINT: endpoint, TRACEVENDOR_PROJECT: "p1" });
    expect(exp.w3c).toBe(false);
    chatWithApprovalAndResume(tracing);
    const headers = new Headers();
    tracing.inject(headers, "peer", tracing.serverSpan("POST"), "req-9");
    expect([...headers.keys()]).toEqual(["x-request-id"]);
    await exp.flush();
    await expect.poll(() => bodies.flatMap((b) => (JSON.parse(b) as { post: unknown[] }).post).length).toBe(9);
    expect(keys.every((k) => k === "vk-123")).toBe(true);
    const runs = bodies.flatMap((b) => (JSON.parse(b) as { post: { session_name: string; name: string }[] }).post);
    expect(new Set(runs.map((r) => r.session_name))).toEqual(new Set(["p1"]));
    expect(bodies.join("")).not.toContain("ship order 7");
  });
});

describe("the workerd entry's factory (run here on Node)", () => {
  it("buffers every ended span and sends OTLP/JSON under http/json when the streamed response ends, through waitUntil", async () => {
    const rx = await receiver();
    const settings = parseSettings({
      API_KEY: "k".repeat(20),
      MODEL_PROVIDER: "fake",
      MODEL_NAME: "fake",
      TRACING_ENABLED: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    const exp = workerTraceExport({ settings, logger: createLogger({ level: "INFO", format: "json", write: () => undefined }), dropped: createSpanDropCounter() });
    const tracing = createTracing({ tracer: exp.tracer, capture: "metadata", propagate: "peers", agentName: "w", agentVersion: "1" });
    const server = tracing.serverSpan("POST").route("/chat");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("event: message.end\n\n"));
        tracing.runSpan({ threadId: "t", runId: "r" }, server).end();
        controller.close();
        server.end();
      },
    });
    const waits: Promise<unknown>[] = [];
    const response = flushAfterResponse(new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } }), { waitUntil: (p) => void waits.push(p) }, exp);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(rx.requests).toHaveLength(0);
    expect(await response.text()).toBe("event: message.end\n\n");
    await expect.poll(() => waits.length).toBe(1);
    await Promise.all(waits);
    expect(rx.requests.map((r) => r.contentType)).toEqual(["application/json"]);
    expect(rx.spans.map((s) => s.name).sort()).toEqual(["POST /chat", "invoke_agent w"]);
  });
});
