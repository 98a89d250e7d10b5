/**
 * The Node, Bun and Deno entries' trace export, loaded when tracing is on: createApp calls the
 * factory only with TRACING_ENABLED, and the OpenTelemetry SDK and its exporter (several MB of
 * RSS) stay unloaded in a process that does not trace.
 */
import type { TraceExportFactory } from "../observability/trace-export.js";

export const lazyNodeTraceExport: TraceExportFactory = async (input) => (await import("./tracing.js")).nodeTraceExport(input);
