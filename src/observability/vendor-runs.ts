/**
 * Spans as runs of the tracing vendor's wire format (README "Tracing"), modelled on LangSmith's
 * run ingestion: a run has a UUID `id`, the `trace_id` of its root run, a `dotted_order` that
 * sorts it under its ancestors (`<start><id>` per level, joined by dots, start as
 * `YYYYMMDDTHHMMSSffffffZ`), its `parent_run_id`, `name`, `run_type` (`chain`, `llm` or `tool`),
 * ISO start and end times, `inputs`/`outputs` (empty unless TRACE_CAPTURE=full),
 * `extra.metadata` (the span's structural attributes and token usage) and `error` (the error
 * type; with its message only under `full`).
 *
 * Ids are derived from the span's, so a parent's run id is known from the child's parent span id
 * without a table: 16 hex digits of the span id and the last 16 of the trace id, stamped as a
 * UUIDv8 (the version meant for custom layouts).
 */
import { type Attributes, type HrTime, SpanStatusCode } from "@opentelemetry/api";
import { type ExportSpan, hrTimeToMillis } from "./span-data.js";
import { ATTR, isContentKey } from "./trace-attributes.js";

export type RunType = "chain" | "llm" | "tool";

export interface VendorRun {
  id: string;
  trace_id: string;
  dotted_order: string;
  parent_run_id?: string;
  name: string;
  run_type: RunType;
  start_time: string;
  end_time: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  extra: { metadata: Record<string, unknown> };
  error?: string;
  session_name: string;
}

/** Where a run sits: what its children need to know of it. */
export interface RunPlace {
  readonly id: string;
  readonly traceId: string;
  readonly dottedOrder: string;
}

export function runId(traceId: string, spanId: string): string {
  const h = `${spanId}${traceId.slice(16)}`;
  const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `20240101T120000123456Z`: LangSmith's dotted-order stamp, to the microsecond. */
function stamp(time: HrTime): string {
  const d = new Date(time[0] * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}${pad(Math.floor(time[1] / 1000), 6)}Z`;
}

function runType(span: ExportSpan): RunType {
  const op = span.attributes[ATTR.operation];
  return op === "chat" ? "llm" : op === "execute_tool" ? "tool" : "chain";
}

/** Content attributes by the field of inputs or outputs they fill (present only under `full`). */
const INPUTS: Readonly<Record<string, string>> = {
  [ATTR.inputMessages]: "messages",
  [ATTR.systemInstructions]: "system",
  [ATTR.toolArguments]: "args",
  [ATTR.chatMetadata]: "metadata",
};
const OUTPUTS: Readonly<Record<string, string>> = { [ATTR.outputMessages]: "messages", [ATTR.toolResult]: "output" };

/** The run of a span whose parent (if any here) is `parent`; the span has passed the capture filter. */
export function toRun(span: ExportSpan, parent: RunPlace | undefined, project: string): { run: VendorRun; place: RunPlace } {
  const sc = span.spanContext();
  const id = runId(sc.traceId, sc.spanId);
  const start = hrTimeToMillis(span.startTime);
  const dottedOrder = `${parent ? `${parent.dottedOrder}.` : ""}${stamp(span.startTime)}${id}`;
  const place: RunPlace = { id, traceId: parent?.traceId ?? id, dottedOrder };
  const inputs: Record<string, unknown> = {};
  const outputs: Record<string, unknown> = {};
  const metadata: Record<string, unknown> = {};
  for (const key in span.attributes) {
    const value = span.attributes[key];
    if (INPUTS[key] !== undefined) inputs[INPUTS[key]] = parsed(value);
    else if (OUTPUTS[key] !== undefined) outputs[OUTPUTS[key]] = parsed(value);
    else if (!isContentKey(key)) metadata[key] = value;
  }
  addUsage(span.attributes, metadata);
  metadata.otel_trace_id = sc.traceId;
  metadata.otel_span_id = sc.spanId;
  const resumed = span.links.find((l) => l.attributes?.[ATTR.linkReason] !== undefined);
  if (resumed) metadata.resumes_run_id = runId(resumed.context.traceId, resumed.context.spanId);
  const run: VendorRun = {
    id,
    trace_id: place.traceId,
    dotted_order: dottedOrder,
    name: span.name,
    run_type: runType(span),
    start_time: new Date(start).toISOString(),
    end_time: new Date(hrTimeToMillis(span.endTime)).toISOString(),
    inputs,
    outputs,
    extra: { metadata },
    session_name: project,
  };
  if (parent) run.parent_run_id = parent.id;
  if (span.status.code === SpanStatusCode.ERROR) {
    const type = String(span.attributes[ATTR.errorType] ?? "error");
    // The status message is gone under `metadata` (capture filter): only the type remains.
    run.error = span.status.message ? `${type}: ${span.status.message}` : type;
  }
  return { run, place };
}

function addUsage(attributes: Attributes, metadata: Record<string, unknown>): void {
  const input = attributes[ATTR.inputTokens];
  const output = attributes[ATTR.outputTokens];
  if (typeof input !== "number" && typeof output !== "number") return;
  const i = typeof input === "number" ? input : 0;
  const o = typeof output === "number" ? output : 0;
  metadata.usage_metadata = { input_tokens: i, output_tokens: o, total_tokens: i + o };
}

function parsed(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}
