/**
 * Spans as an OTLP/JSON ExportTraceServiceRequest (the protobuf JSON mapping with the OTLP
 * exceptions: trace and span ids in hex, not base64; enums as integers; 64-bit integers as
 * decimal strings). Written here, not taken from @opentelemetry/otlp-transformer, because that
 * package brings the SDKs for metrics and logs with it, too much for a worker bundle.
 */
import type { Attributes, AttributeValue } from "@opentelemetry/api";
import { type ExportSpan, groupSpans, hrTimeToNanos } from "./span-data.js";

type AnyValue = { stringValue: string } | { boolValue: boolean } | { intValue: string } | { doubleValue: number } | { arrayValue: { values: AnyValue[] } };
interface KeyValue {
  key: string;
  value: AnyValue;
}

/** The request body: spans grouped by resource and scope (groupSpans). */
export function otlpJsonRequest(spans: readonly ExportSpan[], resource: Attributes = {}): unknown {
  return {
    resourceSpans: [...groupSpans(spans, resource)].map(([res, scopes]) => ({
      resource: { attributes: keyValues(res.attributes) },
      scopeSpans: [...scopes].map(([scope, list]) => ({
        scope: scope.version === undefined ? { name: scope.name } : { name: scope.name, version: scope.version },
        spans: list.map(otlpSpan),
      })),
    })),
  };
}

function otlpSpan(span: ExportSpan): unknown {
  const sc = span.spanContext();
  const state = sc.traceState?.serialize();
  const out: Record<string, unknown> = {
    traceId: sc.traceId,
    spanId: sc.spanId,
    name: span.name,
    // api SpanKind counts from INTERNAL = 0; OTLP from UNSPECIFIED = 0, INTERNAL = 1.
    kind: span.kind + 1,
    startTimeUnixNano: hrTimeToNanos(span.startTime),
    endTimeUnixNano: hrTimeToNanos(span.endTime),
    attributes: keyValues(span.attributes),
    events: span.events.map((e) => ({ timeUnixNano: hrTimeToNanos(e.time), name: e.name, attributes: keyValues(e.attributes) })),
    links: span.links.map((l) => ({
      traceId: l.context.traceId,
      spanId: l.context.spanId,
      ...(l.context.traceState ? { traceState: l.context.traceState.serialize() } : {}),
      attributes: keyValues(l.attributes),
    })),
    status: span.status.message ? { code: span.status.code, message: span.status.message } : { code: span.status.code },
    flags: sc.traceFlags & 0xff,
  };
  if (state) out.traceState = state;
  const parent = span.parentSpanContext;
  if (parent?.spanId) out.parentSpanId = parent.spanId;
  return out;
}

export function keyValues(attributes: Attributes | undefined): KeyValue[] {
  const out: KeyValue[] = [];
  if (!attributes) return out;
  for (const key in attributes) {
    const value = anyValue(attributes[key]);
    if (value) out.push({ key, value });
  }
  return out;
}

function anyValue(value: AttributeValue | undefined | null): AnyValue | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map((v) => anyValue(v) ?? { stringValue: "" }) } };
  return undefined;
}
