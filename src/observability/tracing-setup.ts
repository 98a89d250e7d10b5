/**
 * Tracing as createApp starts it (spec 6.4): off unless TRACING_ENABLED; then the tracer the
 * caller gave (tests, embedding), else the runtime's trace export (a TraceExportFactory the entry
 * passes), else nothing and one line saying so. The facade is built once here; the app hands it
 * to the parts that make spans and keeps `traces` to flush and shut the export down.
 */
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "./logger.js";
import type { Counter } from "./metrics.js";
import { type TraceExport, type TraceExportFactory, type TracingSettings } from "./trace-export.js";
import { createTracing, type TracePropagation, type Tracing } from "./tracing.js";

/** What the app keeps of its trace export. */
export interface AppTraces {
  /** Tracing is on and spans are made. */
  readonly enabled: boolean;
  /** Sends what is buffered; never rejects (on workerd hand it to `ctx.waitUntil`). */
  flush(): Promise<void>;
  /** Flushes and stops the export; never rejects. */
  shutdown(): Promise<void>;
}

export interface TracingStart {
  readonly settings: TracingSettings & { readonly PROPAGATE_TRACE_HEADERS: TracePropagation; readonly A2A_NAME: string };
  /** Called only with tracing enabled and no tracer given. */
  readonly factory?: TraceExportFactory | undefined;
  /** Wins over the factory; nothing is flushed or shut down for it (its owner does that). */
  readonly tracer?: Tracer | undefined;
  readonly logger: Logger;
  /** agent_trace_spans_dropped_total, registered on /metrics. */
  readonly dropped: Counter;
}

const NOTHING: AppTraces = { enabled: false, flush: () => Promise.resolve(), shutdown: () => Promise.resolve() };

export async function startTracing(o: TracingStart): Promise<{ tracing: Tracing; traces: AppTraces }> {
  const { settings } = o;
  const base = { capture: settings.TRACE_CAPTURE, propagate: settings.PROPAGATE_TRACE_HEADERS, agentName: settings.A2A_NAME, agentVersion: settings.AGENT_VERSION };
  // Off, the facade still writes X-Request-ID on outbound calls (PROPAGATE_TRACE_HEADERS).
  const off = () => ({ tracing: createTracing(base), traces: NOTHING });
  if (!settings.tracingEnabled) return off();
  if (o.tracer) {
    o.logger.info("tracing on: spans go to the tracer given to createApp");
    return { tracing: createTracing({ ...base, tracer: o.tracer }), traces: { ...NOTHING, enabled: true } };
  }
  if (!o.factory) {
    o.logger.warning("TRACING_ENABLED is on, but this runtime sets up no trace export: tracing stays off");
    return off();
  }
  const exp: TraceExport = await o.factory({ settings, logger: o.logger.child({}, "tracing"), dropped: o.dropped });
  const vendor = settings.TRACEVENDOR_API_KEY !== undefined;
  // The destination's kind only: its URL or headers may hold a key.
  o.logger.info(vendor ? "tracing on: run trees go to the tracing vendor" : "tracing on: spans go to the OTLP receiver", {
    capture: settings.TRACE_CAPTURE,
  });
  return {
    tracing: createTracing({ ...base, tracer: exp.tracer, w3c: exp.w3c }),
    traces: { enabled: true, flush: () => exp.flush(), shutdown: () => exp.shutdown() },
  };
}
