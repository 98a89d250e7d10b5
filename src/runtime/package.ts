/**
 * The package entry (`import { createApp } from "agent-service"`): the public API of src/index.ts,
 * with createApp and checkPolicy reading the files the settings name from the host's file system
 * (relative to `root`, else the working directory) unless the caller passes its own `readText`.
 * It is a runtime entry because reading files is: the core below never does. With
 * TRACING_ENABLED, spans go out through the OpenTelemetry SDK as on the Node entry
 * (nodeTraceExport, also exported) unless the caller passes its own `traceExport` or `tracer`.
 * On Node, `keepMemoryReducerWorking()` does what the Node entry does at start for V8's memory
 * reducer (memory-reducer.ts).
 */
import { type App, type CreateAppOptions, createApp as createCoreApp } from "../app.js";
import type { ReadText } from "../files.js";
import { checkPolicy as checkCorePolicy, type PolicyCheckResult } from "../index.js";
import { hostReadText } from "./files.js";
import { nodeTraceExport } from "./tracing.js";

export * from "../index.js";
export { nodeTraceExport };
export { serveNode } from "./node-serve.js";
export { keepMemoryReducerWorking } from "./memory-reducer.js";
export type { TraceExport, TraceExportFactory, TraceExportInput } from "../observability/trace-export.js";

export function createApp(options: CreateAppOptions = {}): Promise<App> {
  return createCoreApp({ ...options, readText: options.readText ?? hostReadText(options.root), traceExport: options.traceExport ?? nodeTraceExport });
}

export function checkPolicy(options: Omit<Parameters<typeof checkCorePolicy>[0], "readText"> & { root?: string; readText?: ReadText }): Promise<PolicyCheckResult> {
  return checkCorePolicy({ ...options, readText: options.readText ?? hostReadText(options.root) });
}
