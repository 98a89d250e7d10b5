/// <reference types="node" />
/**
 * Trace export on Node, Bun and Deno (issue 15): spans recorded by our span recorder
 * (span-recorder.ts, why not the SDK's tracer is said there), batched by the OpenTelemetry SDK's
 * batch span processor and sent by its OTLP/HTTP exporter in protobuf (our encoder,
 * otlp-protobuf.ts) or JSON (OTEL_EXPORTER_OTLP_PROTOCOL), or to the tracing vendor when
 * TRACEVENDOR_API_KEY is set. Passed to createApp as `traceExport`, which
 * calls it with the parsed settings: the OTEL_* variables are read from there (the env file
 * included), never from process.env behind the settings' back.
 *
 * A receiver that is down never slows or fails a run: span end only pushes onto a bounded queue
 * (OTEL_BSP_MAX_QUEUE_SIZE), the export runs on the processor's timer, a full queue drops the span,
 * and every dropped span is counted in agent_trace_spans_dropped_total with one WARNING per
 * outage (export-health.ts). The SDK's own diagnostics stay off (no diag logger is registered), so
 * nothing is printed per batch.
 */
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from "@opentelemetry/otlp-exporter-base/node-http";
import { JsonTraceSerializer, ProtobufTraceSerializer, TraceExporterMetricsHelper } from "@opentelemetry/otlp-transformer";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace";
import { type CaptureFilter, captureFilter } from "../observability/capture.js";
import { createExportHealth, type ExportHealth, failureKind } from "../observability/export-health.js";
import { otlpHeaders, otlpProtocol, otlpTracesUrl, type TraceExport, type TraceExportInput, type TracingSettings, traceResource, vendorProject } from "../observability/trace-export.js";
import { otlpProtobufRequest } from "../observability/otlp-protobuf.js";
import { createSpanRecorder, samplerChoice, type EndedSpans, type RecordedSpan } from "../observability/span-recorder.js";
import { PROJECT_NAME } from "../observability/tracing.js";
import { VendorSpanExporter } from "../observability/vendor-exporter.js";

/** The TraceExportFactory of the Node, Bun and Deno entries. */
export function nodeTraceExport(input: TraceExportInput): TraceExport {
  const { settings } = input;
  const vendor = settings.TRACEVENDOR_API_KEY !== undefined;
  const health = createExportHealth({ logger: input.logger, counter: input.dropped, destination: vendor ? "the tracing vendor" : "the OTLP receiver" });
  const guard = new QueueGuard(settings.OTEL_BSP_MAX_QUEUE_SIZE, health);
  const exporter = new GuardedExporter(
    guard,
    vendor
      ? // The vendor exporter filters, counts and warns by itself; it sends as each batch arrives.
        { inner: new VendorSpanExporter({ apiKey: settings.TRACEVENDOR_API_KEY!, project: vendorProject(settings), endpoint: settings.TRACEVENDOR_ENDPOINT, fetch: input.fetch, capture: settings.TRACE_CAPTURE, health, autoFlush: true }) }
      : { inner: otlpExporter(settings), filter: captureFilter(settings.TRACE_CAPTURE), health },
  );
  guard.batch = new BatchSpanProcessor({
    exporter,
    scheduledDelayMillis: settings.OTEL_BSP_SCHEDULE_DELAY,
    exportTimeoutMillis: settings.OTEL_BSP_EXPORT_TIMEOUT,
    maxQueueSize: settings.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: Math.min(settings.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, settings.OTEL_BSP_MAX_QUEUE_SIZE),
  });
  const resource = defaultResource().merge(resourceFromAttributes(traceResource(settings)));
  let stopped: Promise<void> | undefined;
  return {
    tracer: createSpanRecorder({ resource, scope: { name: PROJECT_NAME, version: settings.AGENT_VERSION }, sampler: samplerChoice(settings.OTEL_TRACES_SAMPLER, settings.OTEL_TRACES_SAMPLER_ARG), ended: guard }),
    w3c: !vendor,
    flush: () => guard.forceFlush().catch(() => undefined),
    shutdown: () => (stopped ??= guard.shutdown().catch(() => undefined)),
  };
}

/**
 * Protobuf as the SDK's serializer would write it, by our one-pass encoder (otlp-protobuf.ts: a
 * third of the SDK's cost a span); the receiver's answer is still read by the SDK.
 */
const protobufSerializer = {
  serializeRequest: (spans: ReadableSpan[]) => otlpProtobufRequest(spans),
  deserializeResponse: ProtobufTraceSerializer.deserializeResponse,
};

/** The SDK's OTLP/HTTP trace exporter (node http transport, retries within the timeout) in either encoding. */
function otlpExporter(settings: TracingSettings): SpanExporter {
  const json = otlpProtocol(settings) === "http/json";
  // Everything is given explicitly, so the exporter's own process.env reading never decides.
  const options = convertLegacyHttpOptions(
    { url: otlpTracesUrl(settings), headers: otlpHeaders(settings), timeoutMillis: settings.OTEL_EXPORTER_OTLP_TIMEOUT },
    "TRACES",
    "v1/traces",
    { "Content-Type": json ? "application/json" : "application/x-protobuf" },
  );
  const delegate = createOtlpHttpExportDelegate(options, json ? JsonTraceSerializer : protobufSerializer, "otlp_http_span_exporter", TraceExporterMetricsHelper, undefined);
  return new OTLPExporterBase<ReadableSpan[]>(delegate);
}

/**
 * In front of the batch processor: counts a span its full queue would drop (the SDK drops it
 * silently). The queue's length is mirrored: a span in, a span out when the processor hands a
 * batch to the exporter (GuardedExporter tells).
 */
class QueueGuard implements EndedSpans {
  batch!: BatchSpanProcessor;
  private queued = 0;
  constructor(
    private readonly max: number,
    private readonly health: ExportHealth,
  ) {}
  onEnd(span: RecordedSpan): void {
    if (this.queued >= this.max) return this.health.dropped(1, "queue_full");
    this.queued++;
    // A recorded span has every field of the SDK's ReadableSpan; its resource is the SDK's Resource.
    this.batch.onEnd(span as unknown as ReadableSpan);
  }
  taken(count: number): void {
    this.queued = Math.max(0, this.queued - count);
  }
  forceFlush(): Promise<void> {
    return this.batch.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.batch.shutdown();
  }
}

/**
 * Between the batch processor and the exporter: applies TRACE_CAPTURE, counts a failed batch as
 * dropped and tells the outage once. The processor is told every export succeeded: the spans
 * are accounted for here, and a failure reported to it would only reach the SDK's error handler.
 */
class GuardedExporter implements SpanExporter {
  constructor(
    private readonly guard: QueueGuard,
    private readonly o: { inner: SpanExporter; filter?: CaptureFilter; health?: ExportHealth },
  ) {}
  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.guard.taken(spans.length);
    const { inner, filter, health } = this.o;
    const out = filter ? (spans.map(filter) as ReadableSpan[]) : spans;
    inner.export(out, (result) => {
      if (health && result.code === ExportResultCode.SUCCESS) health.succeeded();
      else if (health) health.dropped(spans.length, "export_failed", failureKind(result.error));
      resultCallback({ code: ExportResultCode.SUCCESS });
    });
  }
  forceFlush(): Promise<void> {
    return this.o.inner.forceFlush?.() ?? Promise.resolve();
  }
  shutdown(): Promise<void> {
    return this.o.inner.shutdown();
  }
}
