/**
 * OTLP/HTTP (protobuf or JSON) over fetch, for workerd (issue 15). A worker may not keep timers or sockets
 * between requests, so nothing is sent on a schedule: `export` only buffers what the span
 * processor hands over, and `flush()` posts the buffer; the worker entry hands that promise to
 * `ctx.waitUntil`, which keeps the isolate alive until it settles, after the response is sent.
 * The buffer is bounded (spans beyond it are dropped and counted) and `flush` never rejects: a
 * receiver that is down costs a failed fetch in the background, never the request.
 */
import { type CaptureFilter, captureFilter } from "./capture.js";
import { type ExportHealth, postBatch } from "./export-health.js";
import { otlpJsonRequest } from "./otlp-json.js";
import { otlpProtobufRequest } from "./otlp-protobuf.js";
import { EXPORT_SUCCESS, type ExportResult, type ExportSpan, type SpanExporterLike } from "./span-data.js";
import type { TraceCapture } from "./tracing.js";

export interface FetchSpanExporterOptions {
  /** The traces URL, `.../v1/traces`. */
  readonly url: string;
  /** Extra request headers (OTEL_EXPORTER_OTLP_HEADERS). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly fetch?: typeof fetch;
  /** OTEL_EXPORTER_OTLP_PROTOCOL (default protobuf). */
  readonly protocol?: "http/protobuf" | "http/json";
  readonly capture: TraceCapture;
  readonly health: ExportHealth;
  /** Most spans held between flushes (default 2048, as the SDK's queue). */
  readonly maxBuffer?: number;
  /** Most spans per request (default 512). */
  readonly maxBatch?: number;
  /** One request's deadline (default 10 s, as OTEL_EXPORTER_OTLP_TIMEOUT). */
  readonly timeoutMs?: number;
}

export class FetchSpanExporter implements SpanExporterLike {
  private buffer: ExportSpan[] = [];
  private readonly filter: CaptureFilter;
  private readonly send: typeof fetch;
  private readonly maxBuffer: number;
  private readonly maxBatch: number;
  private readonly timeoutMs: number;
  private closed = false;

  constructor(private readonly o: FetchSpanExporterOptions) {
    this.filter = captureFilter(o.capture);
    this.send = o.fetch ?? ((input, init) => fetch(input, init));
    this.maxBuffer = o.maxBuffer ?? 2048;
    this.maxBatch = o.maxBatch ?? 512;
    this.timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** Spans buffered, waiting for the next flush. */
  get pending(): number {
    return this.buffer.length;
  }

  export(spans: ExportSpan[], resultCallback: (result: ExportResult) => void): void {
    const room = this.closed ? 0 : this.maxBuffer - this.buffer.length;
    const kept = Math.min(room, spans.length);
    for (let i = 0; i < kept; i++) this.buffer.push(this.filter(spans[i]!));
    this.o.health.dropped(spans.length - kept, "queue_full");
    // Dropped spans are counted here; telling the SDK "failed" would only make it log again.
    resultCallback(EXPORT_SUCCESS);
  }

  /** Posts everything buffered, batch by batch; never rejects. Hand it to `ctx.waitUntil`. */
  async flush(): Promise<void> {
    const spans = this.buffer;
    if (spans.length === 0) return;
    this.buffer = [];
    for (let i = 0; i < spans.length; i += this.maxBatch) await this.post(spans.slice(i, i + this.maxBatch));
  }

  forceFlush(): Promise<void> {
    return this.flush();
  }

  async shutdown(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private post(batch: ExportSpan[]): Promise<void> {
    const json = this.o.protocol === "http/json";
    return postBatch({
      send: this.send,
      url: this.o.url,
      headers: { ...this.o.headers, "content-type": json ? "application/json" : "application/x-protobuf" },
      body: json ? JSON.stringify(otlpJsonRequest(batch)) : otlpProtobufRequest(batch),
      deadlineMs: this.timeoutMs,
      health: this.o.health,
      count: batch.length,
    });
  }
}
