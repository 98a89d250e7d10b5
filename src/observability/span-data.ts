/**
 * What an exporter receives, as structural types on @opentelemetry/api only: the SDK's
 * ReadableSpan and SpanExporter satisfy them, so the web-standard exporters here (fetch,
 * vendor) plug into the SDK's span processors without the core importing the SDK.
 */
import type { Attributes, HrTime, Link, SpanContext, SpanKind, SpanStatus } from "@opentelemetry/api";

export interface ExportEvent {
  readonly name: string;
  readonly time: HrTime;
  readonly attributes?: Attributes | undefined;
}

export interface ExportSpan {
  readonly name: string;
  readonly kind: SpanKind;
  spanContext(): SpanContext;
  readonly parentSpanContext?: SpanContext | undefined;
  readonly startTime: HrTime;
  readonly endTime: HrTime;
  readonly status: SpanStatus;
  readonly attributes: Attributes;
  readonly links: readonly Link[];
  readonly events: readonly ExportEvent[];
  /** What the SDK's limits dropped (OTEL_SPAN_*_LIMIT); absent is none. */
  readonly droppedAttributesCount?: number | undefined;
  readonly droppedEventsCount?: number | undefined;
  readonly droppedLinksCount?: number | undefined;
  readonly resource?: { readonly attributes: Attributes } | undefined;
  readonly instrumentationScope?: { readonly name: string; readonly version?: string | undefined } | undefined;
}

/** The SDK's ExportResultCode: 0 success, 1 failed. */
export interface ExportResult {
  readonly code: 0 | 1;
  readonly error?: Error | undefined;
}

export const EXPORT_SUCCESS: ExportResult = Object.freeze({ code: 0 });

/** The SDK's SpanExporter, structurally. */
export interface SpanExporterLike {
  export(spans: ExportSpan[], resultCallback: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

export type SpanResource = { readonly attributes: Attributes };
export type SpanScope = NonNullable<ExportSpan["instrumentationScope"]>;

const DEFAULT_SCOPE: SpanScope = { name: "agent-service" };

/**
 * Spans grouped as OTLP nests them: by resource, then by instrumentation scope, each by object
 * identity (the tracer shares one of each). A span without a resource goes under `resource`, one
 * without a scope under the project's name.
 */
export function groupSpans(spans: readonly ExportSpan[], resource: Attributes): Map<SpanResource, Map<SpanScope, ExportSpan[]>> {
  const fallback: SpanResource = { attributes: resource };
  const groups = new Map<SpanResource, Map<SpanScope, ExportSpan[]>>();
  for (const span of spans) {
    const res = span.resource ?? fallback;
    const scope = span.instrumentationScope ?? DEFAULT_SCOPE;
    let scopes = groups.get(res);
    if (!scopes) groups.set(res, (scopes = new Map()));
    const list = scopes.get(scope);
    if (list) list.push(span);
    else scopes.set(scope, [span]);
  }
  return groups;
}

/** Nanoseconds since the epoch, as the decimal string OTLP/JSON writes 64-bit integers in. */
export function hrTimeToNanos(time: HrTime): string {
  return (BigInt(time[0]) * 1_000_000_000n + BigInt(time[1])).toString();
}

/** Milliseconds since the epoch (fractional). */
export function hrTimeToMillis(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6;
}
