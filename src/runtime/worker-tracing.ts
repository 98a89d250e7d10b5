/**
 * Trace export on workerd (issue 15). An isolate keeps no timers or sockets between requests,
 * so the SDK's batch processor (a timer) does not fit: every ended span goes straight to a
 * buffering exporter (the SDK's simple processor), and the buffer is sent within the request's
 * lifetime through `ctx.waitUntil` once the response has been streamed (flushAfterResponse).
 * OTLP goes out as http/json whatever OTEL_EXPORTER_OTLP_PROTOCOL says (a collector's
 * /v1/traces takes both; protobuf encoding would add the SDK's transformer, with the metrics and
 * logs SDKs it brings, to the worker bundle). Under TRACEVENDOR_API_KEY the vendor exporter.
 */
import { resourceFromAttributes } from "@opentelemetry/resources";
import { SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { createExportHealth } from "../observability/export-health.js";
import { FetchSpanExporter } from "../observability/fetch-exporter.js";
import { otlpHeaders, otlpTracesUrl, type TraceExport, type TraceExportInput, traceResource, vendorProject } from "../observability/trace-export.js";
import { PROJECT_NAME } from "../observability/tracing.js";
import { VendorSpanExporter } from "../observability/vendor-exporter.js";

/** The TraceExportFactory of the workerd entry. */
export function workerTraceExport(input: TraceExportInput): TraceExport {
  const { settings } = input;
  const vendor = settings.TRACEVENDOR_API_KEY !== undefined;
  const health = createExportHealth({ logger: input.logger, counter: input.dropped, destination: vendor ? "the tracing vendor" : "the OTLP receiver" });
  const common = { fetch: input.fetch, capture: settings.TRACE_CAPTURE, health, maxBuffer: settings.OTEL_BSP_MAX_QUEUE_SIZE, timeoutMs: settings.OTEL_EXPORTER_OTLP_TIMEOUT };
  const exporter = vendor
    ? new VendorSpanExporter({ ...common, apiKey: settings.TRACEVENDOR_API_KEY!, project: vendorProject(settings), endpoint: settings.TRACEVENDOR_ENDPOINT, autoFlush: false })
    : new FetchSpanExporter({ ...common, url: otlpTracesUrl(settings), headers: otlpHeaders(settings), resource: traceResource(settings), maxBatch: settings.OTEL_BSP_MAX_EXPORT_BATCH_SIZE });
  const provider = new TracerProvider({ resource: resourceFromAttributes(traceResource(settings)), spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  let stopped: Promise<void> | undefined;
  return {
    tracer: provider.getTracer(PROJECT_NAME, settings.AGENT_VERSION),
    w3c: !vendor,
    flush: () => exporter.flush(),
    shutdown: () => (stopped ??= provider.shutdown().catch(() => undefined)),
  };
}

interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * The response, whose end (or cancellation) hands a flush of the trace buffer to
 * `ctx.waitUntil`: a streamed /chat ends its spans as its last event goes out, after the handler
 * returned, so flushing when the handler returns would miss them. The flush waits one turn of the
 * event loop so the spans ended by the stream's own close are in.
 */
export function flushAfterResponse(response: Response, ctx: WaitUntil, traces: Pick<TraceExport, "flush">): Response {
  const flush = () => ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 0)).then(() => traces.flush()));
  if (response.body === null) {
    flush();
    return response;
  }
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>({ flush });
  void response.body.pipeTo(writable).catch(flush);
  return new Response(readable, response);
}
