/**
 * Trace export on workerd (issue 15). An isolate keeps no timers or sockets between requests,
 * so the SDK's batch processor (a timer) does not fit: every span the recorder ends goes straight
 * to a buffering exporter, and the buffer is sent within the request's lifetime through
 * `ctx.waitUntil` once the response has been streamed (flushAfterResponse). OTLP goes out in
 * the encoding OTEL_EXPORTER_OTLP_PROTOCOL names (protobuf by default, our encoder), with no
 * OpenTelemetry SDK in the worker bundle. Under TRACEVENDOR_API_KEY the vendor exporter.
 */
import { createExportHealth } from "../observability/export-health.js";
import { FetchSpanExporter } from "../observability/fetch-exporter.js";
import { createSpanRecorder, samplerChoice } from "../observability/span-recorder.js";
import { otlpHeaders, otlpProtocol, otlpTracesUrl, type TraceExport, type TraceExportInput, traceResource, vendorProject } from "../observability/trace-export.js";
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
    : new FetchSpanExporter({
        ...common,
        url: otlpTracesUrl(settings),
        protocol: otlpProtocol(settings),
        headers: otlpHeaders(settings),
        maxBatch: settings.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
      });
  const resource = { attributes: traceResource(settings) };
  const tracer = createSpanRecorder({ resource, scope: { name: PROJECT_NAME, version: settings.AGENT_VERSION }, sampler: samplerChoice(settings.OTEL_TRACES_SAMPLER, settings.OTEL_TRACES_SAMPLER_ARG), ended: { onEnd: (span) => exporter.export([span], () => undefined) } });
  let stopped: Promise<void> | undefined;
  return {
    tracer,
    w3c: !vendor,
    flush: () => exporter.flush(),
    shutdown: () => (stopped ??= exporter.shutdown().catch(() => undefined)),
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
