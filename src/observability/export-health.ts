/**
 * How trace export fails without touching a run (issue 15): spans that cannot be kept or sent are
 * dropped and counted in `agent_trace_spans_dropped_total`, and an outage is told once: one
 * WARNING when export starts failing, one INFO line when it works again (with the number dropped
 * meanwhile), nothing per batch in between. Messages name the destination kind and the error
 * type or status, never the endpoint (its URL or headers may hold a key).
 */
import type { Logger } from "./logger.js";
import { type Counter, SPANS_DROPPED_METRIC } from "./metrics.js";

// The counter lives with the other metrics (createMetrics registers it on /metrics).
export { createSpanDropCounter, SPANS_DROPPED_METRIC } from "./metrics.js";

/** Why spans were dropped: the queue or buffer was full, or their export failed. */
export type DropReason = "queue_full" | "export_failed";

export interface ExportHealth {
  /** Spans were dropped; `why` is an error type or status (`ECONNREFUSED`, `HTTP 503`, `timeout`). */
  dropped(count: number, reason: DropReason, why?: string): void;
  /** An export reached the receiver. */
  succeeded(): void;
  /** Spans dropped since the service started. */
  readonly total: number;
}

/**
 * A full queue or buffer is counted, not logged: while export fails the WARNING has been given,
 * and a receiver that works but cannot keep up shows in the metric.
 */
export function createExportHealth(o: { logger: Logger; counter: Counter; destination: string }): ExportHealth {
  let failing = false;
  let droppedInOutage = 0;
  let total = 0;
  return {
    dropped(count, reason, why) {
      if (count <= 0) return;
      o.counter.inc({ reason }, count);
      total += count;
      if (reason !== "export_failed") return;
      droppedInOutage += count;
      if (failing) return;
      failing = true;
      o.logger.warning(`Trace export to ${o.destination} is failing${why ? ` (${why})` : ""}: spans are dropped and counted in ${SPANS_DROPPED_METRIC} until it answers again`);
    },
    succeeded() {
      if (!failing) return;
      failing = false;
      o.logger.info(`Trace export to ${o.destination} works again; ${droppedInOutage} span(s) were dropped meanwhile`);
      droppedInOutage = 0;
    },
    get total() {
      return total;
    },
  };
}

/**
 * A short, credential-free description of an export failure for the warning: an error code
 * (`ECONNREFUSED`) or the error's class name, never its message (it may quote the URL).
 */
export function failureKind(error: unknown): string {
  if (error === undefined || error === null) return "error";
  const code = (error as { code?: unknown }).code;
  // The OTLP exporter's error carries the HTTP status as a number.
  if (typeof code === "number" && code >= 100 && code <= 599) return `HTTP ${code}`;
  if (typeof code === "string" && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  if (typeof cause === "string" && /^[A-Z0-9_]{2,40}$/.test(cause)) return cause;
  return error instanceof Error ? error.name : "error";
}

/**
 * POSTs one batch of `count` spans and reports it to `health`; never rejects. The response body is
 * cancelled unread (a receiver's answer carries nothing we act on, and an unread body holds the
 * connection). `deadlineMs` bounds the whole exchange.
 */
export async function postBatch(o: {
  send: typeof fetch;
  url: string;
  headers: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer>;
  deadlineMs: number;
  health: ExportHealth;
  count: number;
}): Promise<void> {
  const signal = AbortSignal.timeout(o.deadlineMs);
  try {
    const response = await o.send(o.url, { method: "POST", headers: o.headers, body: o.body, signal });
    await response.body?.cancel();
    if (response.ok) o.health.succeeded();
    else o.health.dropped(o.count, "export_failed", `HTTP ${response.status}`);
  } catch (error) {
    o.health.dropped(o.count, "export_failed", signal.aborted ? "timeout" : failureKind(error));
  }
}
