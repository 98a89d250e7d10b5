/**
 * Tracing through a real app (issue 15, CONTRACT 7): createApp with the Node entry's trace export
 * (src/runtime/tracing.ts) sending to a loopback OTLP/HTTP receiver, which decodes what arrives.
 * A chat whose tool call pauses for an approval, and the decision that resumes it, give the span
 * tree CONTRACT 7 names; TRACE_CAPTURE decides whether the user's message, the tool's arguments
 * and result and the /chat metadata are exported; the upstream's bearer token never is. The
 * tracing vendor gets the same tree as runs, with its API key.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { nodeTraceExport } from "../../src/runtime/tracing.js";
import { chat, makeApp, parseSse, post, type SseEvent, type TestApp } from "../helpers.js";
import { createOrder } from "../support/orders.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { recordingUpstream } from "../support/upstream.js";

/** Markers for what TRACE_CAPTURE=full may export and metadata may not, and a credential neither may. */
const MESSAGE = "MSGMARK1";
const ARGUMENT = "ARGMARK2";
const RESULT = "RESMARK3";
const METADATA = "METAMARK5";
const TOKEN = "TOKMARK4-upstream-bearer-0123456789";

const upstream = recordingUpstream((res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ created: true, note: RESULT }));
});

/** The orders API with a bearer token; every POST waits for the requester's decision. */
const POLICY = `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: bearer
    token_env: ORDERS_TOKEN
    allowed_methods: [GET, POST]
    approval:
      required_for: { methods: [POST] }
      approvers: [requester]
      timeout_s: 600
`;

let rx: OtlpReceiver;
const apps: TestApp[] = [];
beforeAll(async () => {
  rx = await startOtlpReceiver();
});
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  rx.spans.length = 0;
  rx.requests.length = 0;
});
afterAll(async () => {
  await rx.close();
});

async function tracedApp(env: Record<string, string> = {}) {
  const app = await makeApp(
    {
      TRACING_ENABLED: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_BSP_SCHEDULE_DELAY: "20",
      OTEL_SERVICE_NAME: "agent-under-test",
      AGENT_VERSION: "7.7.7",
      ORDERS_URL: upstream.base,
      ORDERS_TOKEN: TOKEN,
      ...env,
    },
    { traceExport: nodeTraceExport, policyText: POLICY, tools: [createOrder] },
  );
  apps.push(app);
  return app;
}

/** A chat whose create_order call waits for approval, then the approval that resumes it. */
async function chatPauseResume(app: TestApp, thread: string) {
  const message = `Please order this, ${MESSAGE}.\n/call create_order {"item":"${ARGUMENT}"}`;
  const paused = await chat(app, { message, thread_id: thread, metadata: { note: METADATA } });
  const end = paused.events.at(-1)!;
  expect(end).toMatchObject({ event: "message.end", data: { status: "awaiting_approval" } });
  const approval = end.data.approval as { approval_id: string; digest: string };
  const res = await app.fetch(post(`/threads/${thread}/approvals/${approval.approval_id}`, { decision: "approve", digest: approval.digest }));
  expect(res.status).toBe(200);
  const resumed: SseEvent[] = parseSse(await res.text());
  expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
  await app.traces.flush();
  return { pausedRun: end.data.run_id as string, resumedRun: resumed.at(-1)!.data.run_id as string, approvalId: approval.approval_id };
}

const one = (spans: ReceivedSpan[], predicate: (s: ReceivedSpan) => boolean, what: string) => {
  const found = spans.filter(predicate);
  expect(found, `${what}: ${spans.map((s) => s.name).join(", ")}`).toHaveLength(1);
  return found[0]!;
};
const childOf = (spans: ReceivedSpan[], parent: ReceivedSpan, name: string) =>
  one(spans, (s) => s.name === name && s.parentSpanId === parent.spanId && s.traceId === parent.traceId, `${name} under ${parent.name}`);

/** Every text an exported span carries: name, attribute and event values, link attributes, status message. */
const exported = (spans: ReceivedSpan[]) =>
  JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.links.map((l) => l.attributes), s.status, s.resource]));

describe("a chat with a tool call, an approval pause and its resume, exported over OTLP", () => {
  it("gives the span tree of CONTRACT 7: request > run > model and tool calls > API call, the resumed run linked to the paused one", async () => {
    const app = await tracedApp({ PROPAGATE_TRACE_HEADERS: "all" });
    upstream.hits.length = 0;
    const { pausedRun, resumedRun, approvalId } = await chatPauseResume(app, "t-trace-tree");
    const spans = await rx.waitFor((s) => s.some((x) => x.name === "POST /orders") && s.filter((x) => x.kind === 2).length >= 2);

    // The chat: POST /chat > invoke_agent app > chat fake, execute_tool create_order > approval_pause orders.
    const chatSpan = one(spans, (s) => s.name === "POST /chat", "the chat's server span");
    expect(chatSpan).toMatchObject({ kind: 2, attributes: { "http.request.method": "POST", "http.route": "/chat", "http.response.status_code": 200 } });
    expect(chatSpan.parentSpanId).toBeUndefined();
    const run = childOf(spans, chatSpan, "invoke_agent app");
    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "app",
      "gen_ai.conversation.id": "t-trace-tree",
      "agent.run.id": pausedRun,
      "agent.run.status": "awaiting_approval",
      "agent.version": "7.7.7",
      "gen_ai.agent.version": "7.7.7",
    });
    expect(run.attributes["agent.principal.hash"]).toEqual(expect.any(String));
    const model = childOf(spans, run, "chat fake");
    expect(model).toMatchObject({ kind: 3, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "fake", "gen_ai.provider.name": "fake" } });
    expect(model.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    const tool = childOf(spans, run, "execute_tool create_order");
    expect(tool.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_order" });
    expect(tool.events.map((e) => e.name)).toContain("approval_pending");
    const pause = childOf(spans, tool, "approval_pause orders");
    expect(pause.attributes).toMatchObject({ "agent.approval.id": approvalId, "agent.api.name": "orders" });

    // The decision: its request > the resumed run (linked to the paused one) > approval_resume,
    // the tool call carried out > the API call, then the model's answer.
    const decide = one(spans, (s) => s.name === "POST /threads/{thread_id}/approvals/{approval_id}", "the decision's server span");
    expect(decide.attributes["http.route"]).toBe("/threads/{thread_id}/approvals/{approval_id}");
    const resumed = childOf(spans, decide, "invoke_agent app");
    expect(resumed.attributes).toMatchObject({ "agent.run.id": resumedRun, "agent.run.status": "ok", "gen_ai.conversation.id": "t-trace-tree" });
    expect(resumed.links).toEqual([{ traceId: run.traceId, spanId: run.spanId, attributes: { "agent.link.reason": "resumes_paused_run" } }]);
    const resume = childOf(spans, resumed, "approval_resume orders");
    expect(resume.attributes).toMatchObject({ "agent.approval.id": approvalId, "agent.approval.decision": "approve" });
    const carried = childOf(spans, resumed, "execute_tool create_order");
    const call = childOf(spans, carried, "POST /orders");
    expect(call).toMatchObject({
      kind: 3,
      attributes: { "http.request.method": "POST", "url.template": "/orders", "agent.api.name": "orders", "http.response.status_code": 200, "server.address": "127.0.0.1" },
    });
    childOf(spans, resumed, "chat fake");

    // Under PROPAGATE_TRACE_HEADERS=all the upstream was told the client span as its parent.
    expect(upstream.hits).toHaveLength(1);
    expect(upstream.hits[0]!.headers.traceparent).toBe(`00-${call.traceId}-${call.spanId}-01`);
    expect(upstream.hits[0]!.headers.baggage).toBeUndefined();

    // Names are route templates, never ids; the resource says which service and version.
    for (const s of spans) expect(s.name).not.toMatch(/t-trace-tree|[0-9a-f]{32}/);
    expect(chatSpan.resource).toMatchObject({ "service.name": "agent-under-test", "service.version": "7.7.7" });
  });

  it("names a request no route matched by its method alone, never its path", async () => {
    const app = await tracedApp();
    expect((await app.fetch(new Request("http://test/no/such/thing-123"))).status).toBe(404);
    await app.traces.flush();
    const spans = await rx.waitFor((s) => s.some((x) => x.kind === 2));
    const server = one(spans, (s) => s.kind === 2, "the server span");
    expect(server.name).toBe("GET");
    expect(server.attributes["http.response.status_code"]).toBe(404);
    expect(exported(spans)).not.toContain("thing-123");
  });

  it("TRACE_CAPTURE=metadata exports none of the message, the arguments, the result or the /chat metadata, and never the bearer token", async () => {
    const app = await tracedApp();
    await chatPauseResume(app, "t-capture-meta");
    const spans = await rx.waitFor((s) => s.some((x) => x.name === "POST /orders"));
    const text = exported(spans);
    for (const marker of [MESSAGE, ARGUMENT, RESULT, METADATA, TOKEN, "Bearer"]) expect(text, marker).not.toContain(marker);
    // Structure is still there: token counts, tool names and ids.
    expect(text).toContain("gen_ai.usage.input_tokens");
    expect(text).toContain("t-capture-meta");
  });

  it("TRACE_CAPTURE=full exports them (message, arguments, result, metadata), still never the bearer token", async () => {
    const app = await tracedApp({ TRACE_CAPTURE: "full" });
    await chatPauseResume(app, "t-capture-full");
    const spans = await rx.waitFor((s) => s.some((x) => x.name === "POST /orders"));
    const text = exported(spans);
    for (const marker of [MESSAGE, ARGUMENT, RESULT, METADATA]) expect(text, marker).toContain(marker);
    for (const marker of [TOKEN, "Bearer"]) expect(text, marker).not.toContain(marker);
    const run = spans.find((s) => s.name === "invoke_agent app" && s.attributes["agent.run.status"] === "awaiting_approval")!;
    expect(String(run.attributes["gen_ai.input.messages"])).toContain(MESSAGE);
    expect(String(run.attributes["agent.chat.metadata"])).toContain(METADATA);
    const tools = spans.filter((s) => s.name === "execute_tool create_order");
    expect(tools.every((t) => String(t.attributes["gen_ai.tool.call.arguments"]).includes(ARGUMENT))).toBe(true);
    expect(tools.some((t) => String(t.attributes["gen_ai.tool.call.result"]).includes(RESULT))).toBe(true);
    expect(spans.some((s) => s.name === "chat fake" && String(s.attributes["gen_ai.output.messages"]).includes("create_order"))).toBe(true);
  });

  it("tracing off (TRACING_ENABLED=no) exports nothing and logs why", async () => {
    const app = await tracedApp({ TRACING_ENABLED: "no" });
    await chat(app, { message: "hello" });
    await app.traces.flush();
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.requests).toHaveLength(0);
    expect(app.traces.enabled).toBe(false);
    expect(app.logs.some((l) => String(l.message).includes("TRACING_ENABLED is not true, yes or 1"))).toBe(true);
  });
});

describe("the tracing vendor through a real app", () => {
  let status = 200;
  const vendor = recordingUpstream((res) => {
    res.statusCode = status;
    res.end("{}");
  });

  it("receives the run tree at <endpoint>/runs/batch with the API key, and only the request id crosses to other services", async () => {
    status = 200;
    vendor.hits.length = 0;
    const app = await tracedApp({ TRACEVENDOR_API_KEY: "vendor-key-for-test", TRACEVENDOR_ENDPOINT: vendor.base, TRACEVENDOR_PROJECT: "proj-x", PROPAGATE_TRACE_HEADERS: "all" });
    upstream.hits.length = 0;
    await chatPauseResume(app, "t-vendor");
    await app.close();
    apps.length = 0;
    expect(vendor.hits.length).toBeGreaterThan(0);
    for (const hit of vendor.hits) {
      expect(hit.url).toBe("/runs/batch");
      expect(hit.headers["x-api-key"]).toBe("vendor-key-for-test");
    }
    type Run = { id: string; name: string; parent_run_id?: string; trace_id: string; run_type: string; session_name: string; extra: { metadata: Record<string, unknown> } };
    const runs = vendor.hits.flatMap((h) => (JSON.parse(h.body) as { post: Run[] }).post);
    const named = (name: string, where: (r: Run) => boolean = () => true) => {
      const found = runs.filter((r) => r.name === name && where(r));
      expect(found, `${name}: ${runs.map((r) => r.name).join(", ")}`).toHaveLength(1);
      return found[0]!;
    };
    const chatRun = named("POST /chat");
    const paused = named("invoke_agent app", (r) => r.parent_run_id === chatRun.id);
    expect(paused.extra.metadata["gen_ai.conversation.id"]).toBe("t-vendor");
    expect(named("chat fake", (r) => r.parent_run_id === paused.id).run_type).toBe("llm");
    const tool = named("execute_tool create_order", (r) => r.parent_run_id === paused.id);
    expect(tool.run_type).toBe("tool");
    named("approval_pause orders", (r) => r.parent_run_id === tool.id);
    const decide = named("POST /threads/{thread_id}/approvals/{approval_id}");
    const resumed = named("invoke_agent app", (r) => r.parent_run_id === decide.id);
    expect(resumed.extra.metadata.resumes_run_id).toBe(paused.id);
    const carried = named("execute_tool create_order", (r) => r.parent_run_id === resumed.id);
    named("POST /orders", (r) => r.parent_run_id === carried.id);
    expect(runs.every((r) => r.session_name === "proj-x")).toBe(true);
    // Metadata capture: nothing the user said, nor the credential, went to the vendor.
    const body = vendor.hits.map((h) => h.body).join("\n");
    for (const marker of [MESSAGE, ARGUMENT, RESULT, METADATA, TOKEN]) expect(body, marker).not.toContain(marker);
    // Under the vendor only the request id is passed on, never a traceparent.
    expect(upstream.hits).toHaveLength(1);
    expect(upstream.hits[0]!.headers["x-request-id"]).toEqual(expect.any(String));
    expect(upstream.hits[0]!.headers.traceparent).toBeUndefined();
    expect(rx.requests).toHaveLength(0);
  });
});
