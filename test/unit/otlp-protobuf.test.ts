import { context, type Span, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { otlpProtobufRequest } from "../../src/observability/otlp-protobuf.js";
import { decodeTraceRequest } from "../support/otlp-proto.js";

/**
 * Our encoder against the SDK's own serializer: both outputs are decoded field by field into one
 * canonical tree (fields of value 0 left out, as proto3 readers treat them) and compared, over
 * spans that use every part of the trace schema.
 */

// Which length-delimited fields are messages, per message type (the rest are strings or bytes).
const MESSAGES: Record<string, Record<number, string>> = {
  Request: { 1: "ResourceSpans" },
  ResourceSpans: { 1: "Resource", 2: "ScopeSpans" },
  Resource: { 1: "KeyValue" },
  ScopeSpans: { 1: "Scope", 2: "Span" },
  Scope: { 3: "KeyValue" },
  Span: { 9: "KeyValue", 11: "Event", 13: "Link", 15: "Status" },
  Event: { 3: "KeyValue" },
  Link: { 4: "KeyValue" },
  Status: {},
  KeyValue: { 2: "AnyValue" },
  AnyValue: { 5: "ArrayValue", 6: "KeyValueList" },
  ArrayValue: { 1: "AnyValue" },
  KeyValueList: { 1: "KeyValue" },
};

type Tree = Record<number, unknown[]>;

function decode(buf: Uint8Array, type: string): Tree {
  const out: Tree = {};
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      if (b === undefined) throw new Error("truncated varint");
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wire = tag & 7;
    let value: unknown;
    if (wire === 0) {
      const v = varint();
      if (v === 0n) continue;
      value = `varint:${v}`;
    } else if (wire === 1) {
      value = `fixed64:${Buffer.from(buf.subarray(pos, pos + 8)).toString("hex")}`;
      pos += 8;
    } else if (wire === 5) {
      value = `fixed32:${Buffer.from(buf.subarray(pos, pos + 4)).toString("hex")}`;
      pos += 4;
    } else if (wire === 2) {
      const length = Number(varint());
      if (pos + length > buf.length) throw new Error("truncated field");
      const bytes = buf.subarray(pos, pos + length);
      pos += length;
      const sub = MESSAGES[type]![field];
      value = sub ? decode(bytes, sub) : `bytes:${Buffer.from(bytes).toString("hex")}`;
    } else throw new Error(`wire type ${wire}`);
    (out[field] ??= []).push(value);
  }
  return out;
}

function spansOf(make: (tracer: ReturnType<TracerProvider["getTracer"]>, other: ReturnType<TracerProvider["getTracer"]>) => void): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "agent-service", "service.version": "1.2.3", "host.cores": 2 }),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  make(provider.getTracer("agent-service", "0.1.0"), provider.getTracer("other-lib"));
  return exporter.getFinishedSpans();
}

function expectSameAsSdk(spans: ReadableSpan[]): Uint8Array {
  const ours = otlpProtobufRequest(spans);
  const sdk = ProtobufTraceSerializer.serializeRequest(spans)!;
  expect(decode(ours, "Request")).toEqual(decode(sdk, "Request"));
  return ours;
}

const LONG_ASCII = "a".repeat(200);
const UNICODE = "héllo wörld ✓ 🎉 مرحبا";
const LONG_UNICODE = "日本語のテキスト🎉".repeat(40);

describe("the OTLP protobuf encoder", () => {
  it("writes what the SDK's serializer writes, over every part of a span", () => {
    const spans = spansOf((tracer, other) => {
      const remote = trace.setSpanContext(context.active(), {
        traceId: "0af7651916cd43dd8448eb211c80319c",
        spanId: "b7ad6b7169203331",
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      });
      const server = tracer.startSpan("POST /chat", { kind: SpanKind.SERVER, attributes: { "http.request.method": "POST", "http.response.status_code": 200 } }, remote);
      const parent = trace.setSpan(context.active(), server);
      const run: Span = tracer.startSpan(
        "invoke_agent agent",
        {
          attributes: {
            short: "x",
            empty: "",
            long: LONG_ASCII,
            unicode: UNICODE,
            longUnicode: LONG_UNICODE,
            yes: true,
            no: false,
            zero: 0,
            int: 42,
            big: 2 ** 40 + 7,
            huge: 2 ** 60,
            negative: -5,
            veryNegative: -(2 ** 55),
            double: 3.25,
            negDouble: -0.5,
            strings: ["a", UNICODE, ""],
            numbers: [1, 2.5, -3],
            bools: [true, false],
            emptyArray: [],
          },
          links: [
            { context: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1 }, attributes: { "agent.link.reason": "resumes_paused_run" } },
            { context: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b8", traceFlags: 0, isRemote: true } },
          ],
        },
        parent,
      );
      run.addEvent("exception", { "exception.type": "Boom", count: 3 });
      run.addEvent("bare");
      run.setStatus({ code: SpanStatusCode.ERROR, message: "it broke: ✗" });
      run.end();
      for (const kind of [SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL]) {
        const s = other.startSpan(`kind ${kind}`, { kind }, trace.setSpan(context.active(), run));
        s.setStatus({ code: SpanStatusCode.OK });
        s.end();
      }
      server.end();
    });
    expect(spans).toHaveLength(6);
    const ours = expectSameAsSdk(spans);
    // Read by the tests' own OTLP decoder too, values and all.
    const decoded = decodeTraceRequest(ours);
    const run = decoded.find((s) => s.name === "invoke_agent agent")!;
    expect(run.attributes).toMatchObject({ long: LONG_ASCII, unicode: UNICODE, longUnicode: LONG_UNICODE, big: 2 ** 40 + 7, negative: -5, double: 3.25, strings: ["a", UNICODE, ""] });
    expect(run.status).toEqual({ code: 2, message: "it broke: ✗" });
    expect(decoded.find((s) => s.name === "POST /chat")!.parentSpanId).toBe("b7ad6b7169203331");
  });

  it("keeps times exact to the nanosecond, past 2^53", () => {
    const spans = spansOf((tracer) => {
      tracer.startSpan("timed", { startTime: [1_764_000_000, 123_456_789] }).end([4_000_000_000, 999_999_999]);
      tracer.startSpan("epoch", { startTime: [0, 1] }).end([0, 2]);
    });
    const decoded = decodeTraceRequest(expectSameAsSdk(spans));
    expect(decoded.find((s) => s.name === "timed")).toMatchObject({ startTimeUnixNano: "1764000000123456789", endTimeUnixNano: "4000000000999999999" });
    expect(decoded.find((s) => s.name === "epoch")).toMatchObject({ startTimeUnixNano: "1", endTimeUnixNano: "2" });
  });

  it("grows past its first buffer, and the bytes of one export are its own after the next", () => {
    const spans = spansOf((tracer) => {
      for (let i = 0; i < 700; i++) tracer.startSpan(`span ${i % 7}`, { attributes: { i, text: `value ${i} ${UNICODE}`, blob: i === 5 ? "z".repeat(100_000) : "" } }).end();
    });
    const first = expectSameAsSdk(spans);
    expect(first.length).toBeGreaterThan(128 * 1024);
    const copy = Uint8Array.from(first);
    otlpProtobufRequest(spans.slice(0, 3));
    expect(first).toEqual(copy);
  });

  it("puts a span with no resource under the one given, and with no scope under the project's", () => {
    const span = spansOf((tracer) => tracer.startSpan("bare").end())[0]!;
    const bare = Object.create(span, { resource: { value: undefined }, instrumentationScope: { value: undefined } }) as ReadableSpan;
    const [decoded] = decodeTraceRequest(otlpProtobufRequest([bare], { "service.name": "given" }));
    expect(decoded).toMatchObject({ name: "bare", resource: { "service.name": "given" }, scope: "agent-service" });
  });
});
