/// <reference types="node" />
/**
 * Trace export on Node, Bun and Deno (issue 15): the OpenTelemetry SDK's tracer provider and batch
 * span processor, sending over OTLP/HTTP in protobuf or JSON (OTEL_EXPORTER_OTLP_PROTOCOL), or to
 * the tracing vendor when TRACEVENDOR_API_KEY is set. Passed to createApp as `traceExport`, which
 * calls it with the parsed settings: the OTEL_* variables are read from there (the env file
 * included), never from process.env behind the settings' back.
 *
 * A receiver that is down never slows or fails a run: span end only pushes onto a bounded queue
 * (OTEL_BSP_MAX_QUEUE_SIZE), the export runs on the processor's timer, a full queue drops the span,
 * and every dropped span is counted in agent_trace_spans_dropped_total with one WARNING per
 * outage (export-health.ts). The SDK's own diagnostics stay off (no diag logger is registered), so
 * nothing is printed per batch.
 */
import { type Context, TraceFlags } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from "@opentelemetry/otlp-exporter-base/node-http";
import { JsonTraceSerializer, ProtobufTraceSerializer, TraceExporterMetricsHelper } from "@opentelemetry/otlp-transformer";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type Span, type SpanExporter, type SpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { type CaptureFilter, captureFilter } from "../observability/capture.js";
import { createExportHealth, type ExportHealth, failureKind } from "../observability/export-health.js";
import { otlpHeaders, otlpProtocol, otlpTracesUrl, type TraceExport, type TraceExportInput, type TracingSettings, traceResource, vendorProject } from "../observability/trace-export.js";
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
  const provider = new TracerProvider({ resource: defaultResource().merge(resourceFromAttributes(traceResource(settings))), spanProcessors: [guard] });
  let stopped: Promise<void> | undefined;
  return {
    tracer: provider.getTracer(PROJECT_NAME, settings.AGENT_VERSION),
    w3c: !vendor,
    flush: () => provider.forceFlush().catch(() => undefined),
    shutdown: () => (stopped ??= provider.shutdown().catch(() => undefined)),
  };
}

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
  const delegate = createOtlpHttpExportDelegate(options, json ? JsonTraceSerializer : ProtobufTraceSerializer, "otlp_http_span_exporter", TraceExporterMetricsHelper, undefined);
  return new OTLPExporterBase<ReadableSpan[]>(delegate);
}

/**
 * In front of the batch processor: counts a span its full queue would drop (the SDK drops it
 * silently). The queue's length is mirrored: a span in, a span out when the processor hands a
 * batch to the exporter (GuardedExporter tells).
 */
class QueueGuard implements SpanProcessor {
  batch!: BatchSpanProcessor;
  private queued = 0;
  constructor(
    private readonly max: number,
    private readonly health: ExportHealth,
  ) {}
  onStart(span: Span, parentContext: Context): void {
    this.batch.onStart(span, parentContext);
  }
  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.max) return this.health.dropped(1, "queue_full");
    this.queued++;
    this.batch.onEnd(span);
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
