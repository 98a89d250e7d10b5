/**
 * The port between the app and a runtime's trace export (STYLE: SDK and exporter setup live in
 * the runtime entries). createApp takes a TraceExportFactory and calls it once its settings and
 * logger exist, handing over the counter /metrics shows dropped spans in; the factory returns the
 * Tracer the facade uses. Also here, web-standard so every entry reads the variables alike: the
 * OTLP URL, headers and resource from the settings.
 */
import type { Attributes, Tracer } from "@opentelemetry/api";
import type { Logger } from "./logger.js";
import type { SamplerName } from "./span-recorder.js";
import type { Counter } from "./metrics.js";
import { PROJECT_NAME, type TraceCapture } from "./tracing.js";

/** The settings trace export reads (a structural subset of Settings: observability is below settings/). */
export interface TracingSettings {
  readonly tracingEnabled: boolean;
  readonly TRACE_CAPTURE: TraceCapture;
  readonly AGENT_VERSION: string;
  readonly TRACEVENDOR_API_KEY?: string | undefined;
  readonly TRACEVENDOR_PROJECT?: string | undefined;
  readonly TRACEVENDOR_ENDPOINT?: string | undefined;
  readonly OTEL_SERVICE_NAME?: string | undefined;
  readonly OTEL_RESOURCE_ATTRIBUTES?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" | "http/json";
  readonly OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: "http/protobuf" | "http/json" | undefined;
  readonly OTEL_EXPORTER_OTLP_HEADERS?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string | undefined;
  readonly OTEL_EXPORTER_OTLP_TIMEOUT: number;
  readonly OTEL_BSP_SCHEDULE_DELAY: number;
  readonly OTEL_BSP_EXPORT_TIMEOUT: number;
  readonly OTEL_BSP_MAX_QUEUE_SIZE: number;
  readonly OTEL_BSP_MAX_EXPORT_BATCH_SIZE: number;
  readonly OTEL_TRACES_SAMPLER: SamplerName;
  readonly OTEL_TRACES_SAMPLER_ARG: number;
}

export interface TraceExportInput {
  readonly settings: TracingSettings;
  readonly logger: Logger;
  /** agent_trace_spans_dropped_total (export-health.ts createSpanDropCounter), registered on /metrics. */
  readonly dropped: Counter;
  /** The fetch the vendor and fetch exporters send with (default the global one). */
  readonly fetch?: typeof fetch;
}

export interface TraceExport {
  readonly tracer: Tracer;
  /** True under OTLP (traceparent crosses processes); false under the tracing vendor (request id only). */
  readonly w3c: boolean;
  /** Sends what is buffered; never rejects. On workerd hand it to `ctx.waitUntil`. */
  flush(): Promise<void>;
  /** Flushes and stops; never rejects. Call once, after the app's own close. */
  shutdown(): Promise<void>;
}

/** What a runtime entry passes to createApp; called only with tracing enabled. */
export type TraceExportFactory = (input: TraceExportInput) => TraceExport | Promise<TraceExport>;

export type OtlpProtocol = "http/protobuf" | "http/json";

/** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL (default http/protobuf). */
export function otlpProtocol(s: TracingSettings): OtlpProtocol {
  return s.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? s.OTEL_EXPORTER_OTLP_PROTOCOL;
}

/**
 * The traces URL as the OTLP exporter specification reads it: the signal's own endpoint as
 * given, else the base endpoint with `v1/traces` appended, else the local collector (4318).
 */
export function otlpTracesUrl(s: TracingSettings): string {
  if (s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = s.OTEL_EXPORTER_OTLP_ENDPOINT ?? "http://localhost:4318";
  return `${base.endsWith("/") ? base : `${base}/`}v1/traces`;
}

/** OTEL_EXPORTER_OTLP_HEADERS with OTEL_EXPORTER_OTLP_TRACES_HEADERS over it. */
export function otlpHeaders(s: TracingSettings): Record<string, string> {
  return { ...keyPairs(s.OTEL_EXPORTER_OTLP_HEADERS), ...keyPairs(s.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };
}

/** service.name (OTEL_SERVICE_NAME, else the resource attributes', else the project name), service.version = AGENT_VERSION. */
export function traceResource(s: TracingSettings): Attributes {
  const attributes: Attributes = { "service.version": s.AGENT_VERSION, ...keyPairs(s.OTEL_RESOURCE_ATTRIBUTES) };
  attributes["service.name"] = s.OTEL_SERVICE_NAME ?? attributes["service.name"] ?? PROJECT_NAME;
  return attributes;
}

/** TRACEVENDOR_PROJECT, else the project name. */
export function vendorProject(s: TracingSettings): string {
  return s.TRACEVENDOR_PROJECT ?? PROJECT_NAME;
}

/** `key1=value1,key2=value2`, values percent-encoded (the W3C Baggage form the OTEL_* variables use). */
function keyPairs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text) return out;
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    if (key === "") continue;
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}
