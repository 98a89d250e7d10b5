import { describe, expect, it } from "vitest";
import { createExportHealth, createSpanDropCounter } from "../../src/observability/export-health.js";
import { createLogger } from "../../src/observability/logger.js";
import type { ExportResult, ExportSpan } from "../../src/observability/span-data.js";
import { ATTR } from "../../src/observability/trace-attributes.js";
import { createTracing, type TraceCapture } from "../../src/observability/tracing.js";
import { VendorSpanExporter, type VendorExporterOptions } from "../../src/observability/vendor-exporter.js";
import type { VendorRun } from "../../src/observability/vendor-runs.js";
import { memoryTracer } from "../support/memory-tracer.js";
import { recordingUpstream } from "../support/upstream.js";

let status = 200;
const vendor = recordingUpstream((res) => {
  res.statusCode = status;
  res.end("{}");
});
const posted = (): VendorRun[] => vendor.hits.flatMap((h) => (JSON.parse(h.body) as { post: VendorRun[] }).post);

function exporter(options: Partial<VendorExporterOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const counter = createSpanDropCounter();
  const logger = createLogger({ level: "INFO", format: "json", write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const health = createExportHealth({ logger, counter, destination: "the tracing vendor" });
  const exp = new VendorSpanExporter({ apiKey: "vendor-key-1", project: "proj", endpoint: `${vendor.base}/api/`, capture: "metadata", health, autoFlush: false, ...options });
  return { exp, counter, warnings: () => lines.filter((l) => l.level === "WARNING") };
}

const exportNow = (exp: VendorSpanExporter, spans: ExportSpan[]) => new Promise<ExportResult>((resolve) => exp.export(spans, resolve));

/** A chat's spans in the order they end (children first): request > run > model, tool > API call (failed). */
function chatSpans(capture: TraceCapture = "full") {
  const mem = memoryTracer();
  const t = createTracing({ tracer: mem.tracer, capture, propagate: "peers", agentName: "orders", agentVersion: "1" });
  const server = t.serverSpan("POST").route("/chat");
  const run = t.runSpan({ threadId: "th", runId: "r1", message: "private words", metadata: { k: "private meta" } }, server);
  t.modelSpan("gpt", run, "openai", "private system", [{ role: "user", content: "private words" }]).usage(3, 4).content(ATTR.outputMessages, [{ role: "assistant", content: "private answer" }]).end();
  const tool = t.toolSpan("create_order", run, "c1", { item: "private args" });
  t.clientSpan("orders", "POST", "/orders", tool).httpStatus(500).end();
  tool.content(ATTR.toolResult, "private result").fail("UpstreamError", "private failure text").end();
  run.end();
  server.end();
  return { mem, t, server, run };
}

const named = (runs: VendorRun[], name: string) => runs.find((r) => r.name === name)!;

describe("the tracing vendor exporter", () => {
  it("posts a run tree to <endpoint>/runs/batch with x-api-key, each run under its parent", async () => {
    vendor.hits.length = 0;
    const { exp } = exporter();
    await exportNow(exp, chatSpans("metadata").mem.spans());
    expect(vendor.hits).toHaveLength(0);
    await exp.flush();
    expect(vendor.hits).toHaveLength(1);
    const hit = vendor.hits[0]!;
    expect(hit.url).toBe("/api/runs/batch");
    expect(hit.headers["x-api-key"]).toBe("vendor-key-1");
    expect(hit.headers["content-type"]).toBe("application/json");
    const runs = posted();
    expect(runs).toHaveLength(5);
    const root = named(runs, "POST /chat");
    const run = named(runs, "invoke_agent orders");
    const llm = named(runs, "chat gpt");
    const tool = named(runs, "execute_tool create_order");
    const call = named(runs, "POST /orders");
    for (const r of runs) {
      expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(r.trace_id).toBe(root.id);
      expect(r.session_name).toBe("proj");
      expect(Date.parse(r.end_time)).toBeGreaterThanOrEqual(Date.parse(r.start_time));
    }
    expect(root.parent_run_id).toBeUndefined();
    expect(root.dotted_order).toMatch(/^\d{8}T\d{12}Z[0-9a-f-]{36}$/);
    for (const [child, parent] of [[run, root], [llm, run], [tool, run], [call, tool]] as const) {
      expect(child.parent_run_id).toBe(parent.id);
      expect(child.dotted_order.startsWith(`${parent.dotted_order}.`)).toBe(true);
      expect(child.dotted_order.endsWith(child.id)).toBe(true);
    }
    expect([root.run_type, run.run_type, llm.run_type, tool.run_type, call.run_type]).toEqual(["chain", "chain", "llm", "tool", "chain"]);
    expect(llm.extra.metadata).toMatchObject({ "gen_ai.request.model": "gpt", usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } });
    expect(run.extra.metadata).toMatchObject({ "gen_ai.conversation.id": "th", "agent.run.id": "r1" });
    expect(tool.error).toBe("UpstreamError");
    expect(call.error).toBe("500");
    // metadata: inputs and outputs empty, nothing the user said anywhere in the body.
    for (const r of runs) expect([r.inputs, r.outputs]).toEqual([{}, {}]);
    expect(hit.body).not.toContain("private");
  });

  it("under full, inputs and outputs hold the content and errors their message", async () => {
    vendor.hits.length = 0;
    const { exp } = exporter({ capture: "full" });
    await exportNow(exp, chatSpans("full").mem.spans());
    await exp.flush();
    const runs = posted();
    expect(named(runs, "invoke_agent orders").inputs).toEqual({ messages: [{ role: "user", parts: [{ type: "text", content: "private words" }] }], metadata: { k: "private meta" } });
    expect(named(runs, "chat gpt").inputs).toEqual({ system: "private system", messages: [{ role: "user", content: "private words" }] });
    expect(named(runs, "chat gpt").outputs).toEqual({ messages: [{ role: "assistant", content: "private answer" }] });
    expect(named(runs, "execute_tool create_order").inputs).toEqual({ args: { item: "private args" } });
    expect(named(runs, "execute_tool create_order").outputs).toEqual({ output: "private result" });
    expect(named(runs, "execute_tool create_order").error).toBe("UpstreamError: private failure text");
    expect(JSON.stringify(named(runs, "chat gpt").extra)).not.toContain("private");
  });

  it("under metadata drops content other code put on spans before anything is sent", async () => {
    vendor.hits.length = 0;
    const { exp } = exporter({ capture: "metadata" });
    await exportNow(exp, chatSpans("full").mem.spans());
    await exp.flush();
    expect(posted()).toHaveLength(5);
    expect(vendor.hits[0]!.body).not.toContain("private");
  });

  it("places a run that outlives its request under the request (a resumed run), linked to the paused run", async () => {
    vendor.hits.length = 0;
    const { exp } = exporter();
    const { mem, t, run: paused } = chatSpans("metadata");
    const pausedAt = paused.traceparent();
    await exportNow(exp, mem.spans());
    mem.reset();
    const decide = t.serverSpan("POST").route("/threads/{thread_id}/approvals/{approval_id}");
    decide.end(); // the decision answered; the resumed run goes on
    await exportNow(exp, mem.spans());
    await exp.flush();
    mem.reset();
    const resumed = t.runSpan({ threadId: "th", runId: "r2", resumes: pausedAt }, decide);
    t.toolSpan("create_order", resumed).end();
    await exportNow(exp, mem.spans()); // the tool ends first: it waits for its run
    expect(exp.pending).toBe(1);
    resumed.end();
    await exportNow(exp, mem.spans().slice(1));
    await exp.flush();
    const runs = posted();
    const d = named(runs, "POST /threads/{thread_id}/approvals/{approval_id}");
    const r2 = runs.find((r) => r.extra.metadata["agent.run.id"] === "r2")!;
    const r1 = runs.find((r) => r.extra.metadata["agent.run.id"] === "r1")!;
    expect(r2.parent_run_id).toBe(d.id);
    expect(r2.trace_id).toBe(d.id);
    expect(r2.extra.metadata.resumes_run_id).toBe(r1.id);
    const tool = runs.filter((r) => r.name === "execute_tool create_order").find((r) => r.parent_run_id === r2.id)!;
    expect(tool.dotted_order.startsWith(`${r2.dotted_order}.`)).toBe(true);
  });

  it("sends a span whose parent never comes as a root after the wait, and every waiting span on shutdown", async () => {
    vendor.hits.length = 0;
    let now = 1_000;
    const { exp } = exporter({ orphanAfterMs: 500, now: () => now });
    const mem = memoryTracer();
    const t = createTracing({ tracer: mem.tracer, capture: "metadata", propagate: "peers", agentName: "a", agentVersion: "1" });
    const never = t.runSpan({ threadId: "t", runId: "r" });
    t.toolSpan("orphan", never).end();
    await exportNow(exp, mem.spans());
    await exp.flush();
    expect(posted()).toHaveLength(0);
    now += 501;
    await exp.flush();
    expect(posted().map((r) => [r.name, r.parent_run_id])).toEqual([["execute_tool orphan", undefined]]);
    mem.reset();
    t.toolSpan("late", never).end();
    await exportNow(exp, mem.spans());
    await exp.shutdown();
    expect(posted().map((r) => r.name)).toEqual(["execute_tool orphan", "execute_tool late"]);
  });

  it("holds a bounded number of spans; beyond it they are dropped and counted", async () => {
    const { exp, counter } = exporter({ maxBuffer: 3 });
    expect((await exportNow(exp, chatSpans().mem.spans())).code).toBe(0);
    expect(exp.pending).toBe(3);
    expect(counter.get({ reason: "queue_full" })).toBe(2);
  });

  it("a vendor that fails: flush resolves, the runs are counted as dropped, one warning per outage", async () => {
    status = 503;
    try {
      const { exp, counter, warnings } = exporter();
      for (let i = 0; i < 3; i++) {
        await exportNow(exp, chatSpans().mem.spans());
        await expect(exp.flush()).resolves.toBeUndefined();
      }
      expect(counter.get({ reason: "export_failed" })).toBe(15);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]!.message).toContain("tracing vendor");
      expect(JSON.stringify(warnings())).not.toContain("vendor-key-1");
    } finally {
      status = 200;
    }
  });

  it("with autoFlush sends on export and answers once sent", async () => {
    vendor.hits.length = 0;
    const { exp } = exporter({ autoFlush: true });
    await exportNow(exp, chatSpans().mem.spans());
    expect(vendor.hits).toHaveLength(1);
  });
});
