import { context, type Span, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { describe, expect, it, vi } from "vitest";
import { createSpanRecorder, type RecordedSpan, type SamplerName, samplerChoice } from "../../src/observability/span-recorder.js";
import { parseTraceparent } from "../../src/observability/trace-context.js";

function recorder(sampler?: [SamplerName, number]) {
  const ended: RecordedSpan[] = [];
  const resource = resourceFromAttributes({ "service.name": "svc" });
  const tracer = createSpanRecorder({
    resource,
    scope: { name: "agent-service", version: "9.9.9" },
    ended: { onEnd: (s) => void ended.push(s) },
    sampler: sampler && samplerChoice(...sampler),
  });
  return { tracer, ended, resource };
}

const hrMs = ([s, ns]: readonly [number, number]) => s * 1000 + ns / 1e6;

describe("the span recorder", () => {
  it("starts root spans with fresh valid ids, children in their parent's trace, and hands each ended span over once", () => {
    const { tracer, ended, resource } = recorder();
    const root = tracer.startSpan("root", { kind: SpanKind.SERVER, attributes: { a: 1 } });
    const child = tracer.startSpan("child", {}, trace.setSpan(context.active(), root));
    const other = tracer.startSpan("other");
    expect(root.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.spanContext().spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(root.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(child.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(other.spanContext().traceId).not.toBe(root.spanContext().traceId);
    expect(new Set([root, child, other].map((s) => s.spanContext().spanId)).size).toBe(3);
    child.end();
    child.end();
    root.end();
    expect(ended.map((s) => s.name)).toEqual(["child", "root"]);
    const [c, r] = ended as [RecordedSpan, RecordedSpan];
    expect(c.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    expect(r.parentSpanContext).toBeUndefined();
    expect(r.kind).toBe(SpanKind.SERVER);
    expect(r.resource).toBe(resource);
    expect(r.instrumentationScope).toEqual({ name: "agent-service", version: "9.9.9" });
    expect(r.ended).toBe(true);
    expect(r.isRecording()).toBe(false);
  });

  it("continues a caller's trace, tracestate included; a caller that did not sample gets a non-recording span that carries the trace on", () => {
    const { tracer, ended } = recorder();
    const sampled = parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x")!;
    const s = tracer.startSpan("in", {}, trace.setSpanContext(context.active(), sampled));
    expect(s.spanContext()).toMatchObject({ traceId: sampled.traceId, traceFlags: TraceFlags.SAMPLED });
    expect(s.spanContext().traceState?.serialize()).toBe("vendor=x");
    s.end();
    expect(ended[0]!.parentSpanContext).toMatchObject({ spanId: "b7ad6b7169203331", isRemote: true });

    const unsampled = parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")!;
    const n = tracer.startSpan("in", {}, trace.setSpanContext(context.active(), unsampled));
    expect(n.isRecording()).toBe(false);
    expect(n.spanContext()).toMatchObject({ traceId: unsampled.traceId, traceFlags: TraceFlags.NONE });
    expect(n.spanContext().spanId).not.toBe(unsampled.spanId);
    n.end();
    expect(ended).toHaveLength(1);

    const root = tracer.startSpan("root", { root: true }, trace.setSpanContext(context.active(), sampled));
    expect(root.spanContext().traceId).not.toBe(sampled.traceId);
  });

  it("keeps attributes as the SDK does: invalid values skipped, at most 128, the rest counted; nothing changes after end", () => {
    const { tracer, ended } = recorder();
    const given = { keep: "v", none: undefined, obj: { x: 1 } as unknown as string };
    const s = tracer.startSpan("s", { attributes: given });
    given.keep = "changed later";
    for (let i = 0; i < 200; i++) s.setAttribute(`k${i}`, i);
    s.setAttribute("keep", "overwritten");
    s.end();
    s.setAttribute("late", true).setStatus({ code: SpanStatusCode.ERROR }).updateName("late").addEvent("late");
    const r = ended[0]!;
    expect(Object.keys(r.attributes)).toHaveLength(128);
    expect(r.attributes.keep).toBe("overwritten");
    expect(r.attributes).not.toHaveProperty("obj");
    expect(r.attributes).not.toHaveProperty("none");
    expect(r.droppedAttributesCount).toBe(73);
    expect(r).toMatchObject({ name: "s", status: { code: SpanStatusCode.UNSET }, events: [] });
  });

  it("status: UNSET changes nothing, OK is final, a message only with ERROR", () => {
    const { tracer, ended } = recorder();
    const a = tracer.startSpan("a");
    a.setStatus({ code: SpanStatusCode.ERROR, message: "boom" }).setStatus({ code: SpanStatusCode.UNSET }).end();
    const b = tracer.startSpan("b");
    b.setStatus({ code: SpanStatusCode.OK, message: "ignored" }).setStatus({ code: SpanStatusCode.ERROR, message: "too late" }).end();
    expect(ended.map((s) => s.status)).toEqual([{ code: SpanStatusCode.ERROR, message: "boom" }, { code: SpanStatusCode.OK }]);
  });

  it("events and links: attributes copied, at most 128 each (the oldest goes, counted); exceptions as the conventions' event", () => {
    const { tracer, ended } = recorder();
    const link = { context: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1 }, attributes: { why: "resumes" } };
    const s: Span = tracer.startSpan("s", { links: [link] });
    for (let i = 0; i < 130; i++) s.addEvent(`e${i}`, { i });
    for (let i = 0; i < 128; i++) s.addLink({ context: link.context });
    s.recordException(Object.assign(new TypeError("bad input"), { stack: "TypeError: bad input\n at x" }));
    s.end();
    const r = ended[0]!;
    expect(r.events).toHaveLength(128);
    expect(r.droppedEventsCount).toBe(3);
    expect(r.events.at(-1)).toMatchObject({ name: "exception", attributes: { "exception.type": "TypeError", "exception.message": "bad input", "exception.stacktrace": "TypeError: bad input\n at x" } });
    expect(r.events[0]).toMatchObject({ name: "e3", attributes: { i: 3 } });
    expect(r.links).toHaveLength(128);
    expect(r.droppedLinksCount).toBe(1);
  });

  it("times: start and end from the clock, in epoch HrTime; given times kept to the nanosecond; an end before the start is the start", () => {
    const { tracer, ended } = recorder();
    const before = Date.now();
    const s = tracer.startSpan("now");
    s.end();
    const after = Date.now();
    const r = ended[0]!;
    expect(hrMs(r.startTime)).toBeGreaterThanOrEqual(before - 1);
    expect(hrMs(r.endTime)).toBeLessThanOrEqual(after + 1);
    expect(hrMs(r.endTime)).toBeGreaterThanOrEqual(hrMs(r.startTime));
    expect(r.startTime[1]).toBeLessThan(1e9);

    tracer.startSpan("given", { startTime: [1_764_000_000, 123_456_789] }).end([1_764_000_001, 5]);
    const given = ended[1]!;
    expect([given.startTime, given.endTime, given.duration]).toEqual([[1_764_000_000, 123_456_789], [1_764_000_001, 5], [0, 876_543_216]]);
    tracer.startSpan("backwards", { startTime: new Date(2_000_000_000_000) }).end(new Date(1_000_000_000_000));
    expect(ended[2]!.endTime).toEqual(ended[2]!.startTime);
  });

  it("times follow the wall clock when the monotonic clock has drifted from it (a long-lived process), as the SDK's do", () => {
    const { tracer, ended } = recorder();
    // The time origin plus performance.now() five seconds ahead of Date.now().
    const monotonic = performance.now.bind(performance);
    const drifted = vi.spyOn(performance, "now").mockImplementation(() => monotonic() + 5_000);
    try {
      const before = Date.now();
      const s = tracer.startSpan("drifted");
      s.addEvent("now");
      s.addEvent("a performance reading", performance.now());
      s.end();
      const after = Date.now();
      const r = ended[0]!;
      expect(hrMs(r.startTime)).toBeGreaterThanOrEqual(before);
      expect(hrMs(r.endTime)).toBeLessThanOrEqual(after + 1);
      for (const e of r.events) {
        expect(hrMs(e.time)).toBeGreaterThanOrEqual(hrMs(r.startTime));
        expect(hrMs(e.time)).toBeLessThanOrEqual(hrMs(r.endTime));
      }
      // A span given a performance reading as its start is placed by the same clocks.
      const t = performance.now() - 250;
      tracer.startSpan("earlier", { startTime: t }).end();
      const earlier = ended[1]!;
      expect(hrMs(earlier.startTime)).toBeGreaterThanOrEqual(before - 250 - 1);
      expect(hrMs(earlier.startTime)).toBeLessThanOrEqual(Date.now() - 250 + 1);
    } finally {
      drifted.mockRestore();
    }
  });

  it("startActiveSpan hands the function its span and returns its result, in each of the API's forms", () => {
    const { tracer } = recorder();
    expect(tracer.startActiveSpan("a", (s) => s.spanContext().traceId)).toMatch(/^[0-9a-f]{32}$/);
    expect(tracer.startActiveSpan("b", { kind: SpanKind.CLIENT }, (s) => s.spanContext().spanId)).toMatch(/^[0-9a-f]{16}$/);
    expect(tracer.startActiveSpan("c", {}, context.active(), () => 7)).toBe(7);
  });

  it("its spans are ReadableSpans to the SDK: the SDK's JSON serializer writes them", () => {
    const { tracer, ended } = recorder();
    const s = tracer.startSpan("POST /chat", { kind: SpanKind.SERVER, attributes: { "http.route": "/chat" } });
    s.addEvent("e", { n: 1 });
    s.end();
    const body = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(ended as unknown as ReadableSpan[])));
    const rs = body.resourceSpans[0];
    expect(rs.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "svc" } });
    expect(rs.scopeSpans[0].scope).toMatchObject({ name: "agent-service", version: "9.9.9" });
    expect(rs.scopeSpans[0].spans[0]).toMatchObject({ name: "POST /chat", kind: 2, traceId: s.spanContext().traceId, spanId: s.spanContext().spanId });
  });

  describe("sampling (OTEL_TRACES_SAMPLER)", () => {
    const sampled = (s: Span) => (s.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
    const caller = (flags: string) => trace.setSpanContext(context.active(), parseTraceparent(`00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-${flags}`)!);

    it("always_off records nothing, yet its spans carry the trace on, marked not sampled", () => {
      const { tracer, ended } = recorder(["always_off", 1]);
      const root = tracer.startSpan("root");
      expect(root.isRecording()).toBe(false);
      expect(root.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(sampled(root)).toBe(false);
      const child = tracer.startSpan("child", {}, trace.setSpan(context.active(), root));
      expect(child.spanContext().traceId).toBe(root.spanContext().traceId);
      root.end();
      child.end();
      expect(ended).toHaveLength(0);
    });

    it("parent-based: a caller's decision wins over the root sampler, both ways", () => {
      const off = recorder(["parentbased_always_off", 1]);
      expect(sampled(off.tracer.startSpan("x", {}, caller("01")))).toBe(true);
      expect(sampled(off.tracer.startSpan("x"))).toBe(false);
      const on = recorder(["parentbased_always_on", 1]);
      expect(sampled(on.tracer.startSpan("x", {}, caller("00")))).toBe(false);
      // Not parent-based: the root sampler decides even under a sampled caller.
      expect(sampled(recorder(["always_off", 1]).tracer.startSpan("x", {}, caller("01")))).toBe(false);
    });

    it("traceidratio keeps about the ratio of traces, the same ones in every service, and whole traces under parent-based", () => {
      const a = recorder(["traceidratio", 0.25]);
      const b = recorder(["traceidratio", 0.25]);
      let kept = 0;
      for (let i = 0; i < 4000; i++) {
        const root = a.tracer.startSpan("root");
        // The same trace id in another service with the same ratio: the same decision.
        const elsewhere = b.tracer.startSpan("in b", {}, trace.setSpanContext(context.active(), { ...root.spanContext(), traceFlags: TraceFlags.SAMPLED, isRemote: true }));
        expect(sampled(elsewhere)).toBe(sampled(root));
        if (sampled(root)) kept++;
      }
      expect(kept).toBeGreaterThan(800);
      expect(kept).toBeLessThan(1200);
      const whole = recorder(["parentbased_traceidratio", 0.25]);
      for (let i = 0; i < 200; i++) {
        const root = whole.tracer.startSpan("root");
        expect(sampled(whole.tracer.startSpan("child", {}, trace.setSpan(context.active(), root)))).toBe(sampled(root));
      }
      expect(recorder(["traceidratio", 0]).tracer.startSpan("x").isRecording()).toBe(false);
      expect(recorder(["traceidratio", 1]).tracer.startSpan("x").isRecording()).toBe(true);
    });
  });
});
