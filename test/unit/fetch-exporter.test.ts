import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExportHealth, createSpanDropCounter } from "../../src/observability/export-health.js";
import { FetchSpanExporter, type FetchSpanExporterOptions } from "../../src/observability/fetch-exporter.js";
import { createLogger } from "../../src/observability/logger.js";
import type { ExportResult, ExportSpan } from "../../src/observability/span-data.js";
import { createSpanRecorder } from "../../src/observability/span-recorder.js";
import { ATTR } from "../../src/observability/trace-attributes.js";
import { createTracing } from "../../src/observability/tracing.js";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.js";

let rx: OtlpReceiver;
beforeAll(async () => {
  rx = await startOtlpReceiver();
});
afterAll(() => rx.close());

function exporter(options: Partial<FetchSpanExporterOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const counter = createSpanDropCounter();
  const logger = createLogger({ level: "INFO", format: "json", write: (l) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const health = createExportHealth({ logger, counter, destination: "the OTLP receiver" });
  const exp = new FetchSpanExporter({ url: `${rx.url}/v1/traces`, protocol: "http/json", capture: "metadata", health, ...options });
  const warnings = () => lines.filter((l) => l.level === "WARNING");
  return { exp, counter, warnings };
}

/** Ended spans of a small chat, as the worker's span recorder makes them: run > model, run > tool (content set under full). */
function chatSpans(): ExportSpan[] {
  const ended: ExportSpan[] = [];
  const tracer = createSpanRecorder({ resource: { attributes: { "service.name": "worker-test" } }, scope: { name: "agent-service" }, ended: { onEnd: (span) => void ended.push(span) } });
  const t = createTracing({ tracer, capture: "full", propagate: "peers", agentName: "a", agentVersion: "1" });
  const run = t.runSpan({ threadId: "th", runId: "r", message: "private words" });
  t.modelSpan("m", run).usage(1, 2).content(ATTR.outputMessages, "private answer").end();
  t.toolSpan("lookup", run, "c1", { q: "private args" }).end();
  run.end();
  return ended;
}

const exportNow = (exp: FetchSpanExporter, spans: ExportSpan[]) =>
  new Promise<ExportResult>((resolve) => exp.export(spans, resolve));

describe("the fetch OTLP exporter (workerd)", () => {
  it("sends protobuf unless told http/json, decoded to the same spans", async () => {
    rx.spans.length = 0;
    rx.requests.length = 0;
    const { exp } = exporter({ protocol: undefined });
    await exportNow(exp, chatSpans());
    await exp.flush();
    expect(rx.requests.map((r) => r.contentType)).toEqual(["application/x-protobuf"]);
    expect(rx.spans.map((s) => s.name).sort()).toEqual(["chat m", "execute_tool lookup", "invoke_agent a"]);
    const run = rx.spans.find((s) => s.name === "invoke_agent a")!;
    expect(run.resource).toEqual({ "service.name": "worker-test" });
    expect(rx.spans.find((s) => s.name === "chat m")).toMatchObject({ parentSpanId: run.spanId, attributes: { "gen_ai.usage.input_tokens": 1 } });
    expect(JSON.stringify(rx.spans)).not.toContain("private");
  });

  it("buffers on export and posts OTLP/JSON on flush, content filtered before export", async () => {
    rx.spans.length = 0;
    rx.requests.length = 0;
    const { exp } = exporter({ headers: { "x-tenant": "acme" } });
    expect((await exportNow(exp, chatSpans())).code).toBe(0);
    expect(exp.pending).toBe(3);
    expect(rx.requests).toHaveLength(0);
    await exp.flush();
    expect(exp.pending).toBe(0);
    expect(rx.requests).toHaveLength(1);
    expect(rx.requests[0]!.contentType).toBe("application/json");
    expect(rx.requests[0]!.headers["x-tenant"]).toBe("acme");
    const names = rx.spans.map((s) => s.name).sort();
    expect(names).toEqual(["chat m", "execute_tool lookup", "invoke_agent a"]);
    const run = rx.spans.find((s) => s.name === "invoke_agent a")!;
    expect(rx.spans.find((s) => s.name === "chat m")!.parentSpanId).toBe(run.spanId);
    expect(rx.spans.find((s) => s.name === "chat m")!.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 2 });
    expect(run.resource).toEqual({ "service.name": "worker-test" });
    expect(run.kind).toBe(1);
    expect(JSON.stringify(rx.spans)).not.toContain("private");
  });

  it("under full the content goes out", async () => {
    rx.spans.length = 0;
    const { exp } = exporter({ capture: "full" });
    await exportNow(exp, chatSpans());
    await exp.flush();
    const text = JSON.stringify(rx.spans);
    for (const words of ["private words", "private answer", "private args"]) expect(text).toContain(words);
  });

  it("holds a bounded buffer: spans beyond it are dropped and counted, and export still answers success", async () => {
    const { exp, counter } = exporter({ maxBuffer: 4 });
    await exportNow(exp, chatSpans());
    expect((await exportNow(exp, chatSpans())).code).toBe(0);
    expect(exp.pending).toBe(4);
    expect(counter.get({ reason: "queue_full" })).toBe(2);
  });

  it("posts in batches of maxBatch", async () => {
    rx.requests.length = 0;
    const { exp } = exporter({ maxBatch: 2 });
    await exportNow(exp, [...chatSpans(), ...chatSpans()]);
    await exp.flush();
    expect(rx.requests).toHaveLength(3);
  });

  it("a failing receiver: flush resolves, the spans are counted, one warning for the outage", async () => {
    rx.status = 503;
    try {
      const { exp, counter, warnings } = exporter();
      for (let i = 0; i < 3; i++) {
        await exportNow(exp, chatSpans());
        await expect(exp.flush()).resolves.toBeUndefined();
      }
      expect(counter.get({ reason: "export_failed" })).toBe(9);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]!.message).toContain("HTTP 503");
    } finally {
      rx.status = 200;
    }
  });

  it("a receiver that never answers is cut at the deadline", async () => {
    const hang: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => init!.signal!.addEventListener("abort", () => reject(init!.signal!.reason)));
    const { exp, counter, warnings } = exporter({ fetch: hang, timeoutMs: 50 });
    await exportNow(exp, chatSpans());
    const started = Date.now();
    await exp.flush();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(counter.get({ reason: "export_failed" })).toBe(3);
    expect(warnings()[0]!.message).toContain("(timeout)");
  });

  it("after shutdown nothing is buffered", async () => {
    const { exp, counter } = exporter();
    await exp.shutdown();
    await exportNow(exp, chatSpans());
    expect(exp.pending).toBe(0);
    expect(counter.get({ reason: "queue_full" })).toBe(3);
  });
});
